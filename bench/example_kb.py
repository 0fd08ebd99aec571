"""An example organisation for benchmarks: the `retrieval` items of its kept eval sets (never
the held-out ones, not even for timing) and its knowledge base ingested over its shipped vectors."""

from __future__ import annotations

from pathlib import Path

from agent.config import Settings
from agent.knowledge.embed_cache import SEED_FILE
from agent.knowledge.ingest import ingest
from agent.runtime import Runtime
from agent.yamlio import safe_load

ROOT = Path(__file__).resolve().parent.parent


def kept_retrieval(org: str) -> list[dict]:
    """Every `retrieval` item with a question in examples/ORG/eval, held-out sets left out."""
    out: list[dict] = []
    for path in sorted((ROOT / "examples" / org / "eval").glob("*.yaml")):
        if "heldout-34" in path.name or path.name.startswith("fresh"):
            continue  # held out: not even for timing
        data = safe_load(path.read_text(encoding="utf-8")) or {}
        out += [item for item in data.get("retrieval") or [] if item.get("question")]
    return out


async def open_ingested(org: str, data: Path) -> Runtime:
    """A runtime over `data` (created here) with examples/ORG/kb ingested, its vectors from the
    example's seed (no embedding), no calibration. The caller closes it."""
    data.mkdir()
    seed = ROOT / "examples" / org / SEED_FILE
    if seed.is_file():
        (data / SEED_FILE).write_bytes(seed.read_bytes())
    runtime = Runtime.open(Settings(data_dir=data))
    try:
        await ingest(runtime, [ROOT / "examples" / org / "kb"], calibration_wanted=False)
    except BaseException:
        await runtime.close()
        raise
    return runtime
