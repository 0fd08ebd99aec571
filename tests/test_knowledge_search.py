"""Hybrid search and the get_formatted_context tool on a real embedded Qdrant."""

from __future__ import annotations

import re

import pytest

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.knowledge.search import KnowledgeBaseUnavailable, Passage, SearchFilters, search
from agent.runtime import Runtime
from agent.tools.base import ToolRegistry
from agent.tools.formatted_context import format_passages, get_formatted_context, make_tool
from tests.knowledge_fixtures import open_runtime

KEYWORD_QUERIES = ["KinderSign", "TX3C", "4,106", "1-888-265-6461"]
# the Qdrant-server-down test's client warns (possibly later, when collected) that it found no server
pytestmark = pytest.mark.filterwarnings("ignore:Failed to obtain server version")


def _has(term: str, p: Passage) -> bool:
    return term.lower() in f"{p.title} {p.section} {p.text}".lower()


async def test_hybrid_beats_dense_only_on_keyword_queries(settings, kb_subset):
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb_subset])
        first_hit = {"hybrid": [], "dense": []}
        hits_at_3 = {"hybrid": 0, "dense": 0}
        for query in KEYWORD_QUERIES:
            for mode in first_hit:
                passages = await search(rt, query, top_k=5, mode=mode)
                flags = [_has(query, p) for p in passages]
                first_hit[mode].append(flags.index(True) + 1 if True in flags else 99)
                hits_at_3[mode] += sum(flags[:3])
        assert first_hit["hybrid"] == [1, 1, 1, 1], first_hit  # exact terms, codes and numbers come first
        assert first_hit["dense"] != [1, 1, 1, 1], first_hit  # the embedding alone misses some
        assert hits_at_3["hybrid"] > hits_at_3["dense"], hits_at_3


async def test_search_results_filters_and_scores(settings, kb_subset):
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb_subset])
        passages = await search(rt, "¿cuánto tiempo tiene la familia para reportar cambios?", top_k=3)
        assert len(passages) == 3
        assert passages[0].source == "child-care-services-parent-rights-espanol-twc-qa.md"
        assert all(p.dense_score is not None and 0 < p.dense_score <= 1 for p in passages)
        assert [p.score for p in passages] == sorted((p.score for p in passages), reverse=True)

        only = await search(rt, "KinderSign", top_k=10, filters=SearchFilters(source="trs-parent-brochure-spa-qa.md"))
        assert only and {p.source for p in only} == {"trs-parent-brochure-spa-qa.md"}
        spanish = await search(rt, "income limit", top_k=10, filters=SearchFilters(lang="es"))
        assert spanish and {p.lang for p in spanish} == {"es"}
        assert await search(rt, "   ") == []


async def test_missing_collection_and_unreachable_server_are_clear_errors(settings):
    async with open_runtime(settings) as rt:
        with pytest.raises(KnowledgeBaseUnavailable, match=r"knowledge base 'kb' is empty — run `askdesk ingest PATH`"):
            await search(rt, "anything")
    down = Settings(data_dir=settings.data_dir, qdrant_url="http://127.0.0.1:9")  # nothing listens on port 9
    rt = Runtime.open(down)
    try:
        with pytest.raises(KnowledgeBaseUnavailable, match="cannot be reached"):
            await search(rt, "anything")
    finally:
        await rt.close()


def _passage(i: int, text: str, dense: float = 0.9) -> Passage:
    return Passage(text=text, source=f"doc{i}.md", title=f"Doc {i}", section="A > B", score=1 / i, dense_score=dense)


def test_formatting_respects_the_budget_and_marks_boundaries():
    passages = [_passage(i, f"passage {i} " + "x" * 500) for i in range(1, 6)]
    text, used = format_passages(passages, budget=1500)
    assert len(text) <= 1500
    assert len(used) == 2 == text.count("<document ") == text.count("</document>")
    assert '<document index="1" source="doc1.md" title="Doc 1" section="A &gt; B" score="1.000">' in text
    # a single passage larger than the budget is trimmed, not dropped
    text, used = format_passages([_passage(1, "y" * 5000)], budget=800)
    assert len(text) <= 800 and len(used) == 1 and text.endswith("…\n</document>")
    # attribute values cannot break out of their quotes
    text, _ = format_passages([Passage(text="t", source='a"b<c>.md', score=1.0)], budget=500)
    assert 'source="a&quot;b&lt;c&gt;.md"' in text


async def test_formatted_context_tool(settings, kb_subset):
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb_subset])
        result = await get_formatted_context(rt, "family of 5 paid bi-weekly income limit BCY 2026", top_k=4)
        assert not result.weak_evidence
        assert result.text.count("<document ") == len(result.data) <= 4
        assert "$4,106" in result.text
        assert len(result.text) <= rt.settings.context_chars
        assert result.references[0].source == "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
        assert result.references[0].section and result.references[0].title
        assert result.data[0].dense_score is not None and result.data[0].text

        tight = rt.settings.model_copy(update={"context_chars": 900})
        rt.settings = tight
        result = await get_formatted_context(rt, "KinderSign", top_k=10)
        assert len(result.text) <= 900 and 1 <= result.text.count("<document ") < 10
        assert len(result.references) <= result.text.count("<document ")

        # the tool as the agent sees it: schema, bounds, and errors as text
        rt.settings = rt.settings.model_copy(update={"context_chars": 6000})
        registry = ToolRegistry()
        registry.register(make_tool(rt))
        tool = registry.get("get_formatted_context")
        assert tool.progress == "Searching the knowledge base…"
        assert set(tool.schema()["parameters"]["properties"]) == {"query", "top_k"}
        out = await registry.run("get_formatted_context", {"query": "TX3C", "top_k": 2})
        assert out.text.count("<document ") == 2
        bad = await registry.run("get_formatted_context", {"query": "TX3C", "top_k": 50})
        assert bad.text.startswith("ERROR: invalid arguments")


async def test_weak_evidence_is_flagged_below_the_threshold(settings, kb_subset):
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb_subset])
        on_topic = await get_formatted_context(rt, "KinderSign tablet sign in", top_k=3)
        best = max(p.dense_score for p in on_topic.data)
        assert not on_topic.weak_evidence and "weak evidence" not in on_topic.text

        rt.settings = rt.settings.model_copy(update={"min_score": best + 0.01})
        weak = await get_formatted_context(rt, "KinderSign tablet sign in", top_k=3)
        assert weak.weak_evidence
        assert re.search(r"weak evidence .*\(best similarity \d\.\d\d < \d\.\d\d\)", weak.text)

        rt.settings = rt.settings.model_copy(update={"min_score": 0.80})
        off_topic = await get_formatted_context(rt, "who won the football world cup in 1998?", top_k=3)
        assert off_topic.weak_evidence


def test_tied_fused_scores_are_ordered_by_dense_similarity_then_document_so_answers_are_reproducible():
    from agent.knowledge.search import Passage, ranked

    def p(source: str, score: float, dense: float | None, chunk: int = 0) -> Passage:
        return Passage(text="t", source=source, score=score, dense_score=dense, chunk_index=chunk)

    engine_order = [p("b.md", 0.583, 0.81), p("a.md", 1.0, 0.80), p("c.md", 0.583, 0.86),
                    p("d.md", 0.583, 0.81, 2), p("d.md", 0.583, 0.81, 1), p("e.md", 0.2, None)]
    order = [(x.source, x.chunk_index) for x in ranked(engine_order, 5)]
    assert order == [("a.md", 0), ("c.md", 0), ("b.md", 0), ("d.md", 1), ("d.md", 2)]
    assert ranked(list(reversed(engine_order)), 5) == ranked(engine_order, 5)  # whatever order the engine used


async def test_the_shorthand_in_a_file_name_finds_the_document_that_spells_it_out(settings, tmp_path):
    """Staff type "BCY26" or "BCY 26"; the document says "Board Contract Year 2026" and only
    its file name carries the shorthand, which BM25 indexes with every chunk."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "bcy-26-relative-care.md").write_text(
        "# Relative care payments\n\nFor Board Contract Year 2026 relative child care is paid at a reduced rate.\n",
        encoding="utf-8")
    (kb / "bcy25-relative-care.md").write_text(
        "# Relative care payments\n\nFor Board Contract Year 2025 relative child care is paid at a reduced rate.\n",
        encoding="utf-8")
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb])
        for query in ("BCY26 relative care rate", "bcy 26 relative care rate", "BCY-26 relative care"):
            passages = await search(rt, query, top_k=2, mode="sparse")
            assert passages[0].source == "bcy-26-relative-care.md", (query, [p.source for p in passages])
        assert (await search(rt, "BCY25 relative care rate", top_k=2, mode="sparse"))[0].source == "bcy25-relative-care.md"
