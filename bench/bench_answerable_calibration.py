"""What the "not in the documents" calibration adds to an ingest (agent/knowledge/answerable_calibration.py).

    .venv/bin/python bench/bench_answerable_calibration.py [KB_DIR ...] [--embedding-cache FILE]

Each knowledge base (default: the HR handbook sample) is ingested into a fresh temporary data
dir without calibration, then the off-topic gate's calibration and the answerable calibration
are timed separately. `--embedding-cache` seeds each data dir with an embedding cache (an
`embedding-cache.sqlite` of an earlier ingest), so the ingest column is not dominated by
embedding. The load average is printed because the machines are shared.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from pathlib import Path

from agent.config import Settings
from agent.knowledge import answerable_calibration, calibration
from agent.knowledge.ingest import ingest
from agent.runtime import Runtime

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_KB = ROOT / "examples" / "hr-it-handbook" / "kb"


async def measure(kb: Path, cache: Path | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="askdesk-bench-answerable-") as tmp:
        settings = Settings(data_dir=Path(tmp))
        if cache is not None:
            shutil.copy(cache, Path(tmp) / "embedding-cache.sqlite")
        runtime = Runtime.open(settings)
        try:
            load = os.getloadavg()[0]
            report = await ingest(runtime, [kb], calibration_wanted=False)
            started = time.perf_counter()
            ex = await calibration.examples(runtime)
            gate = await calibration.compute_and_store(runtime, settings.collection, ex.texts, ex.vectors, ex.langs,
                                                       close_pct=calibration.CLOSE_PCT, categories=ex.kinds)
            gate_s = time.perf_counter() - started
            cuts = await answerable_calibration.calibrate(runtime, settings.collection, gate.to_json(),
                                                          measure=calibration.centered,
                                                          embed=calibration.embed_queries)
        finally:
            await runtime.close()
    return {"kb": kb.parent.name if kb.name == "kb" else kb.name, "chunks": report.chunks, "ingest_s": report.seconds,
            "gate_s": gate_s, "answerable_s": cuts.seconds, "pseudo": sum(cuts.answered.values()),
            "cuts": ", ".join(f"{lang} P {cuts.precision[lang]} R {cuts.recall[lang]}" for lang in cuts.cuts) or "none",
            "load": load}


def table(rows: list[dict]) -> str:
    head = ["knowledge base", "chunks", "ingest s", "gate calibration s", "answerable calibration s",
            "pseudo-questions", "per language (pseudo-questions)", "load avg"]
    lines = [head] + [[r["kb"], str(r["chunks"]), f"{r['ingest_s']:.1f}", f"{r['gate_s']:.1f}",
                       f"{r['answerable_s']:.1f}", str(r["pseudo"]), r["cuts"], f"{r['load']:.1f}"] for r in rows]
    widths = [max(len(row[i]) for row in lines) for i in range(len(head))]
    out = [" | ".join(c.ljust(w) for c, w in zip(row, widths)) for row in lines]
    out.insert(1, "-+-".join("-" * w for w in widths))
    return f"{os.cpu_count()} CPUs\n" + "\n".join(out)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("kb", nargs="*", type=Path, default=[DEFAULT_KB])
    parser.add_argument("--embedding-cache", type=Path, default=None)
    args = parser.parse_args()
    print(table([asyncio.run(measure(kb, args.embedding_cache)) for kb in args.kb]))


if __name__ == "__main__":
    main()
