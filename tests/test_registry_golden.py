"""The demo registry answers its whole request corpus exactly as recorded in
tests/golden/registry_facility.json — the outputs tests/test_registry_equivalence.py proved
identical to the old `agent.facilities` code's (this test outlives that code).

The registry is embedded here with `TokenHashEmbedder` (tests/registry_corpus.py), whose
vectors are sums of small integers: every machine computes the same similarities. With the
shipped model, two records' similarities to a query differ by as little as 1e-4 and the
model's own arithmetic differs that much between machines, so "closest by meaning" lists
swapped neighbours on one machine and not on another. What this file pins is the engine's
parsing, filtering, ranking rules and formatting; how good the meaning-based order is, is
measured by the evals on the real model.

After an intended change, rewrite the file and review its diff:

    .venv/bin/python -m tests.test_registry_golden --write
"""

from __future__ import annotations

import asyncio
import json
import sys

import pytest
import pytest_asyncio

from agent.capabilities.registry import registry_capabilities
from agent.config import Settings
from agent.prompts import default_prompts
from agent.runtime import Runtime
from tests.conftest import REPO, SAMPLE_FACILITIES
from tests.registry_corpus import TOKEN_HASH, TokenHashEmbedder, engine_outputs, golden_record

DECLARATION = REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml"
GOLDEN = REPO / "tests" / "golden" / "registry_facility.json"
ITEMS = json.loads(GOLDEN.read_text(encoding="utf-8"))["items"] if GOLDEN.is_file() else []


async def _open(data_dir):
    settings = Settings(data_dir=data_dir, registries=[DECLARATION], embedder=TOKEN_HASH, embedding_cache=False)
    runtime = Runtime.open(settings)
    runtime._embedders[TOKEN_HASH] = TokenHashEmbedder()  # type: ignore[assignment]
    (capability,) = registry_capabilities(runtime)
    report = await capability.registry.ingest(SAMPLE_FACILITIES)
    assert (report.loaded, report.errors) == (121, [])
    return runtime, capability


@pytest_asyncio.fixture(scope="module")
async def demo(tmp_path_factory):
    runtime, capability = await _open(tmp_path_factory.mktemp("golden"))
    yield capability
    await runtime.close()


def test_the_golden_file_is_the_whole_corpus():
    requests = [item["request"] for item in ITEMS]
    assert len(requests) >= 300 and len(set(requests)) == len(requests)
    assert sum(1 for item in ITEMS if item["command"]["ids"]) >= 180  # most requests find records
    assert sum(1 for item in ITEMS if item["claims"]) >= 120


@pytest.mark.parametrize("item", ITEMS, ids=range(len(ITEMS)))
async def test_answers_as_recorded(demo, item):
    assert golden_record(await engine_outputs(demo, default_prompts(), item["request"])) == item


async def _write(requests: list[str]) -> None:
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as tmp:
        runtime, capability = await _open(Path(tmp))
        try:
            items = [golden_record(await engine_outputs(capability, default_prompts(), text)) for text in requests]
        finally:
            await runtime.close()
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    lines = ",\n".join(json.dumps(item, ensure_ascii=False) for item in items)  # one request per line
    GOLDEN.write_text('{"registry": "facility", "items": [\n' + lines + "\n]}\n", encoding="utf-8")
    print(f"wrote {len(items)} items to {GOLDEN}")


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.test_registry_golden --write")
    try:  # while the old code exists, the corpus is rebuilt from its tests and the evals
        from tests.test_registry_equivalence import corpus

        found = corpus()
    except ImportError:
        found = [item["request"] for item in ITEMS]
    asyncio.run(_write(found))
