"""Synthetic knowledge bases and registries for the scale benchmarks, built without embedding.

Chunk i is the sample knowledge base's chunk i % 567 with two made-up words appended (one shared
by every 5,000th chunk, one its own: the vocabulary grows with the size, as a real one does) and
the number of its document (50 chunks each) before its title; dense vectors are random unit
vectors, BM25 vectors are what `bm25_document` gives for that text — derived from the 567 sample
chunks' tokens plus the few new words, so 1M chunks are written in minutes instead of hours of
tokenising — and the statistics are counted from them as an ingest counts them (`check`
verifies them against `statistics.build` at small sizes). Registry rows are jittered copies of the sample registry
(bench/bench_facilities.py) with hashed random vectors recorded as the configured embedder's.
"""

from __future__ import annotations

import math
import os
import time
import uuid
from collections import Counter
from pathlib import Path

import numpy as np

from agent.knowledge import calibration, statistics
from agent.knowledge.chunking import chunk_document
from agent.knowledge.sparse import AVG_DOC_TERMS, B, K1, term_index, tokens
from agent.knowledge.store import DENSE, SPARSE, ensure_collection
from agent.runtime import Runtime
from agent.store.models import PointStruct, SparseVector

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "examples" / "texas-childcare" / "kb"
REGISTRY = ROOT / "examples" / "texas-childcare" / "registries" / "facility.yaml"
PER_DOC = 50
BATCH = 2048


def sample_chunks() -> list[tuple[str, str, str]]:
    """(title, section, text) of the sample knowledge base's Markdown chunks."""
    out = []
    for path in sorted(KB.glob("*.md")):
        title = path.stem.replace("-", " ")
        for chunk in chunk_document(path.read_text(encoding="utf-8"), title=title):
            out.append((title, chunk.section, chunk.text))
    return out


class _Base:
    """One sample chunk's tokens, computed once."""

    def __init__(self, title: str, section: str, text: str) -> None:
        self.title, self.section, self.text = title, section, text
        self.sparse = Counter(tokens(f"{title}\n{text}", "en"))  # what the BM25 vector indexes
        self.index = {term: term_index(term) for term in self.sparse}


def _sparse(counts: Counter, known: dict[str, int]) -> SparseVector:
    """`bm25_document`'s vector for a text whose tokens are `counts`."""
    norm = K1 * (1 - B + B * sum(counts.values()) / AVG_DOC_TERMS)
    merged: dict[int, float] = {}
    for term, tf in counts.items():
        idx = known.get(term) or term_index(term)
        merged[idx] = max(merged.get(idx, 0.0), tf * (K1 + 1) / (tf + norm))
    indices = sorted(merged)
    return SparseVector(indices=indices, values=[merged[i] for i in indices])


def chunk(i: int, bases: list[_Base]) -> tuple[dict, SparseVector]:
    """Chunk i's payload and BM25 vector."""
    base = bases[i % len(bases)]
    doc = str(i // PER_DOC)
    suffix = f"zq{i % 5000}x ref{i}"
    extra = tokens(suffix, "en")
    sparse = base.sparse.copy()
    sparse[doc] += 1
    sparse.update(extra)
    payload = {"source": f"doc{doc}.md", "title": f"{doc} {base.title}", "section": base.section,
               "chunk_index": i % PER_DOC, "lang": "en", "content_hash": str(i), "file_hash": doc,
               "n_chunks": PER_DOC, "version": "v1", "format": "md", "text": f"{base.text} {suffix}"}
    return payload, _sparse(sparse, base.index)


async def build_kb(runtime: Runtime, size: int, *, collection: str = "kb", progress: bool = False) -> float:
    """Write `size` synthetic chunks and save their statistics as an ingest would; seconds."""
    started = time.perf_counter()
    bases = [_Base(*c) for c in sample_chunks()]
    embedder = runtime.embedder()
    await ensure_collection(runtime, collection, embedder=embedder)
    dim = len(await embedder.embed_query("dimension"))
    rng = np.random.default_rng(size)
    stats = statistics.Statistics()
    for start in range(0, size, BATCH):
        n = min(BATCH, size - start)
        vectors = rng.standard_normal((n, dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        points = []
        for j, vector in zip(range(start, start + n), vectors.tolist()):
            payload, sparse = chunk(j, bases)
            stats.count(payload, sparse.indices)
            points.append(PointStruct(id=str(uuid.UUID(int=j + 1)), vector={DENSE: vector, SPARSE: sparse},
                                      payload=payload))
        await runtime.store.upsert(collection, points)
        if progress and (start // BATCH) % 10 == 9:
            print(f"  [{collection}] {start + n:,}/{size:,} chunks, {time.perf_counter() - started:.0f} s, "
                  f"rss {rss_mb():,.0f} MB", flush=True)
    await runtime.store.optimize(collection)
    if progress:
        print(f"  [{collection}] optimized, {time.perf_counter() - started:.0f} s, rss {rss_mb():,.0f} MB", flush=True)
    stats.content_version = await calibration.mark_changed(runtime, collection)
    await statistics.save(runtime, collection, stats)
    await calibration.refresh(runtime, collection)  # as an ingest does: the gate finds it ready
    return time.perf_counter() - started


async def check(runtime: Runtime, collection: str = "kb") -> None:
    """The statistics `build_kb` saved are what a scan of the collection counts."""
    saved = statistics.load(runtime, collection)
    scanned = await statistics.build(runtime, collection)
    for name in ("chunks", "df", "headings", "langs", "titles"):
        assert getattr(saved, name) == getattr(scanned, name), f"synthetic statistics differ from a scan: {name}"


def named_random_embedder(name: str, dim: int):
    """Hashed random unit vectors under another embedder's name and size (registry rows)."""
    from bench.bench_facilities import HashedRandomEmbedder

    embedder = HashedRandomEmbedder()
    embedder.name, embedder.dim = name, dim
    return embedder


def print_table(rows: list[dict[str, str]]) -> None:
    """`rows` as one Markdown table (their keys the header)."""
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows:
        print("| " + " | ".join(row.values()) + " |")


def declare_registry(path: Path, collection: str) -> Path:
    """The demo's registry declaration, at `path`, over `collection`."""
    text = REGISTRY.read_text(encoding="utf-8").replace("collection: facilities", f"collection: {collection}", 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def build_registry(runtime: Runtime, declaration: Path, rows: int) -> float:
    """Load `rows` jittered copies of the sample registry into the registry `declaration`
    declares (its places counted and saved as any ingest does); seconds."""
    from agent.registry.declaration import load_declaration
    from agent.registry.registry import Registry
    from bench.bench_facilities import synthetic

    started = time.perf_counter()
    real = runtime.embedder()
    cheap = named_random_embedder(real.name, len(await real.embed_query("dimension")))
    registry = Registry(load_declaration(declaration), runtime)
    report = await registry.ingest_rows(synthetic(registry, rows), embedder=cheap)  # type: ignore[arg-type]
    assert report.loaded == rows, report.summary()
    return time.perf_counter() - started


def rss_mb() -> float:
    """This process's resident memory now (Linux)."""
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def mb(n: int) -> str:
    return f"{n / 1e6:,.1f} MB" if n < 1e9 else f"{n / 1e9:,.2f} GB"


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, math.ceil(p * len(values)) - 1)]
