"""What writing back the marks of Vietnamese typed without them costs and gives
(agent/knowledge/vietnamese_marks.py): every kept retrieval question of an example organisation
typed without marks, searched as typed and with its marks written back.

    .venv/bin/python bench/bench_vietnamese_marks.py [--org city-permits] [--reps 3]

Ingests examples/ORG/kb into a temporary data dir (its shipped vectors), times the first
restoration (the collection's Vietnamese pages counted once per content version), then each
question's search both ways in alternating rounds (the query embedding cache holds both forms
after the first round), and counts recall@1 / @5 both ways. Held-out sets are not read.
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

from agent.evaluation.retrieval import hit_rank  # noqa: E402
from agent.knowledge import search as search_module  # noqa: E402
from agent.knowledge import vietnamese_marks  # noqa: E402
from agent.knowledge.language import typed_without_marks  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from agent.knowledge.store import collection_metadata  # noqa: E402
from bench.example_kb import kept_retrieval, open_ingested  # noqa: E402


async def _as_typed(runtime, name, query, metadata):
    return query


async def main(org: str, reps: int) -> None:
    asked = [item for item in kept_retrieval(org) if item.get("must_contain") and typed_without_marks(item["question"])]
    restoring = search_module._with_marks
    times: dict[str, list[float]] = {"as typed": [], "with marks": []}
    ranks: dict[str, list[int | None]] = {"as typed": [], "with marks": []}
    with tempfile.TemporaryDirectory() as tmp:
        runtime = await open_ingested(org, Path(tmp) / "data")
        try:
            name = runtime.settings.collection
            metadata = await collection_metadata(runtime, name)
            started = time.perf_counter()
            restored = await vietnamese_marks.with_marks(runtime, name, asked[0]["question"], metadata) if asked else ""
            first = (time.perf_counter() - started) * 1000
            started = time.perf_counter()
            for item in asked:
                await vietnamese_marks.with_marks(runtime, name, item["question"], metadata)
            restore_each = (time.perf_counter() - started) * 1000 / max(len(asked), 1)
            for rep in range(reps):
                for way in (("as typed", "with marks") if rep % 2 == 0 else ("with marks", "as typed")):
                    search_module._with_marks = _as_typed if way == "as typed" else restoring
                    for item in asked:
                        started = time.perf_counter()
                        found = await search(runtime, item["question"], top_k=5)
                        times[way].append((time.perf_counter() - started) * 1000)
                        if rep == 0:
                            ranks[way].append(hit_rank(found, [str(s) for s in item["must_contain"]]))
        finally:
            search_module._with_marks = restoring
            await runtime.close()
    print(f"{org}: {len(asked)} kept questions typed without marks × {reps} rounds; e.g. {restored!r}\n")
    print(f"first restoration (the Vietnamese pages counted): {first:.1f} ms; each later one: {restore_each:.2f} ms\n")
    print("| search | median ms | p90 ms | recall@1 | recall@5 |\n|---|---|---|---|---|")
    for way in ("as typed", "with marks"):
        values = sorted(times[way])
        p90 = values[int(0.9 * (len(values) - 1))] if values else 0.0
        n = max(len(ranks[way]), 1)
        r1 = sum(1 for r in ranks[way] if r == 1) / n
        r5 = sum(1 for r in ranks[way] if r) / n
        print(f"| {way} | {statistics.median(values) if values else 0:.1f} | {p90:.1f} | {r1:.3f} | {r5:.3f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", default="city-permits")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.org, args.reps))
