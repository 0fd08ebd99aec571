"""What language centering costs a search: median `search()` latency with the collection's
language means (agent/knowledge/language_centers.py) and without them, on a multilingual
example knowledge base (English, Spanish and Vietnamese pages); and what the centered hybrid of a
question in a minority language costs (search._centered_hybrid: three store queries and a fusion
here instead of the engine's), against the usual hybrid for the same questions.

    .venv/bin/python bench/bench_centering.py [--org city-permits] [--reps 3]

Ingests examples/ORG/kb into a temporary data dir (its shipped vectors: no embedding), warms the
store, then times every `retrieval` question of the org's kept eval sets in alternating rounds
(without, with, without, with ...), so drift of a shared machine falls on both sides alike.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.knowledge import language_centers  # noqa: E402
from agent.knowledge import search as search_module  # noqa: E402
from agent.knowledge.language import detect_language  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from bench.example_kb import kept_retrieval, open_ingested  # noqa: E402


def questions(org: str) -> list[str]:
    return [str(item["question"]) for item in kept_retrieval(org)]


async def main(org: str, reps: int) -> None:
    asked = questions(org)
    with tempfile.TemporaryDirectory() as tmp:
        runtime = await open_ingested(org, Path(tmp) / "data")
        try:
            for question in asked[:10]:
                await search(runtime, question, top_k=5)
            current = language_centers.current
            centered = current(runtime, runtime.settings.collection,
                               await runtime.store.collection_metadata(runtime.settings.collection) or {},
                               runtime.embedder().name) is not None
            minority = search_module._minority

            async def never(*args) -> bool:
                return False

            variants = (("raw cosine", lambda *a, **k: None, minority), ("centered, usual hybrid", current, never),
                        ("centered", current, minority))
            times: dict[str, list[float]] = {label: [] for label, _, _ in variants}
            other: dict[str, list[float]] = {label: [] for label, _, _ in variants}
            for _ in range(reps):
                for label, fn, minor in variants:
                    language_centers.current, search_module._minority = fn, minor
                    for question in asked:
                        started = time.perf_counter()
                        await search(runtime, question, top_k=5)
                        elapsed = (time.perf_counter() - started) * 1000
                        times[label].append(elapsed)
                        if detect_language(question, default="") not in ("en", ""):
                            other[label].append(elapsed)
            language_centers.current, search_module._minority = current, minority
        finally:
            await runtime.close()
    print(f"{org}: {len(asked)} questions x {reps}; collection centered: {centered}\n")
    print("| search | median ms | p95 ms | Spanish/Vietnamese questions: median ms |\n|---|---|---|---|")
    for label, values in times.items():
        values.sort()
        print(f"| {label} | {statistics.median(values):.2f} | {values[int(0.95 * (len(values) - 1))]:.2f} "
              f"| {statistics.median(other[label]) if other[label] else float('nan'):.2f} |")
    ratio = statistics.median(times["centered"]) / statistics.median(times["raw cosine"])
    print(f"\ncentered / raw median: {ratio:.2f}x")
    if other["centered"]:
        ratio = statistics.median(other["centered"]) / statistics.median(other["centered, usual hybrid"])
        print(f"Spanish/Vietnamese questions, centered hybrid / usual hybrid median: {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", default="city-permits")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.org, args.reps))
