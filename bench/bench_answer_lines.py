"""What weighing answer lines by meaning costs and gives (agent/knowledge/line_meaning.py): for
every `retrieval` question of an example organisation's kept eval sets, the lines a search-only
answer quotes first picked by words alone and by words and meaning.

    .venv/bin/python bench/bench_answer_lines.py [--org city-permits]

Ingests examples/ORG/kb into a temporary data dir (its shipped vectors: no chunk embedding),
searches each question once, then, with the embedding cache emptied, times in this order: the
lines by words; the lines by words and meaning, the questions in turn from the empty cache (a
line is embedded by the first question that weighs it: a new deployment's first questions);
the same again, every line read from the data directory's embedding cache (every later
question, and an example's first: its seed ships them).
Also counts, per language, the questions whose quoted lines (else the first passage) hold the
expected text, and whose first line does. Held-out sets (heldout-34, fresh-*) are not read.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.knowledge.answer_lines import answer_lines  # noqa: E402
from agent.knowledge.embed_cache import CACHE_FILE  # noqa: E402
from agent.knowledge.line_meaning import line_closeness  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from bench.example_kb import kept_retrieval, open_ingested  # noqa: E402


def items(org: str) -> list[dict]:
    return [item for item in kept_retrieval(org) if item.get("must_contain")]


def holds(text: str, wanted: list[str]) -> bool:
    return all(w.lower() in text.lower() for w in wanted)


def ms(values: list[float], q: float = 0.5) -> str:
    values = sorted(values)
    return f"{values[int(q * (len(values) - 1))]:.1f}" if values else "-"


async def main(org: str) -> None:
    asked = items(org)
    counts: Counter = Counter()
    times: dict[str, list[float]] = {"words": [], "cold": [], "warm": []}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        runtime = await open_ingested(org, data)
        try:
            found = [(item, await search(runtime, item["question"], top_k=5)) for item in asked]
            (data / CACHE_FILE).unlink()  # the seed's line vectors gone: the first pass embeds every line
            for item, passages in found:
                started = time.perf_counter()
                by_words = answer_lines(item["question"], passages)
                times["words"].append((time.perf_counter() - started) * 1000)
                started = time.perf_counter()
                close = await line_closeness(runtime, item["question"], passages)
                lines = answer_lines(item["question"], passages, closeness=close)
                times["cold"].append((time.perf_counter() - started) * 1000)
                first = (passages[0].context or passages[0].text) if passages else ""
                for tag, picked in (("words", by_words), ("meaning", lines)):
                    lead = " ".join(l.unit.markdown() for l in picked) if picked else first
                    top = picked[0].unit.markdown() if picked else first
                    for key in (item.get("lang", "en"), "all"):
                        counts[(key, tag, "ok")] += holds(lead, item["must_contain"])
                        counts[(key, tag, "first")] += holds(top, item["must_contain"])
                        counts[(key, tag, "lines")] += len(picked)
                for key in (item.get("lang", "en"), "all"):
                    counts[(key, "n")] += 1
            for item, passages in found:
                started = time.perf_counter()
                close = await line_closeness(runtime, item["question"], passages)
                answer_lines(item["question"], passages, closeness=close)
                times["warm"].append((time.perf_counter() - started) * 1000)
        finally:
            await runtime.close()
    print(f"{org}: {len(asked)} kept questions\n")
    print("| lines picked | median ms | p90 ms |\n|---|---|---|")
    print(f"| by words | {ms(times['words'])} | {ms(times['words'], 0.9)} |")
    print(f"| by words and meaning, from an empty cache | {ms(times['cold'])} | {ms(times['cold'], 0.9)} |")
    print(f"| by words and meaning, lines in the embedding cache | {ms(times['warm'])} | {ms(times['warm'], 0.9)} |")
    ratio = statistics.median(times["warm"]) / max(statistics.median(times["words"]), 1e-6)
    print(f"\nwarm / by words median: {ratio:.1f}x\n")
    print("| language | n | by words: lines hold it / first line does / lines | by words and meaning |\n|---|---|---|---|")
    for key in sorted({k[0] for k in counts}, key=lambda k: (k == "all", k)):
        n = counts[(key, "n")]
        cells = [f"{counts[(key, t, 'ok')]} / {counts[(key, t, 'first')]} / {counts[(key, t, 'lines')] / n:.2f}"
                 for t in ("words", "meaning")]
        print(f"| {key} | {n} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--org", default="city-permits")
    args = parser.parse_args()
    asyncio.run(main(args.org))
