"""Cross-language retrieval: a question in one language finds the answer in another's document."""

from __future__ import annotations

import shutil

import pytest

from agent.config import Settings
from agent.evaluation.retrieval import hit_rank
from agent.knowledge import search as search_module
from agent.knowledge.fused import fuse
from agent.knowledge.search import Passage, ranked, search, with_other_languages
from agent.prompts import load_prompts
from agent.providers.base import ProviderError
from agent.providers.function import FunctionModel, ScriptedModel
from agent.tools.formatted_context import format_passages, get_formatted_context
from tests.knowledge_fixtures import REPO, copied, ingested, open_runtime

PERMITS = REPO / "examples" / "city-permits" / "kb"
# one English page and the Spanish and Vietnamese guides: none of those covers trees
FILES = ["tree-removal.md", "guia-del-propietario-es.md", "alquileres-de-corto-plazo-es.md",
         "sua-nha-va-kiem-tra-vi.md", "huong-dan-giay-phep-kinh-doanh-vi.md"]
SPANISH = "¿Cuánto cuesta el permiso para quitar un árbol grande en mi propiedad?"
VIETNAMESE = "Chặt cây sồi trắng Oregon có cần giấy phép không?"
ENGLISH = "How much is a permit to remove a large tree on my property?"


@pytest.fixture(scope="module")
def permits_ingested(tmp_path_factory) -> Settings:
    """The five pages ingested once for the module."""
    root = tmp_path_factory.mktemp("permits")
    (root / "kb").mkdir()
    for name in FILES:
        shutil.copy(PERMITS / name, root / "kb" / name)
    return ingested(root, root / "kb")


@pytest.fixture
def permits_settings(permits_ingested, tmp_path) -> Settings:
    return copied(permits_ingested, tmp_path / "data")


def _p(source: str, chunk: int, score: float, dense: float, lang: str = "en") -> Passage:
    return Passage(text=f"{source} {chunk}", source=source, chunk_index=chunk, score=score, dense_score=dense, lang=lang)


def test_a_close_other_language_passage_joins_the_ranking_and_a_weak_one_does_not():
    fused = [_p("guia-es.md", 1, 0.60, 0.86, "es"), _p("guia-es.md", 2, 0.55, 0.85, "es"),
             _p("rentas-es.md", 1, 0.50, 0.84, "es")]
    others = [_p("trees.md", 3, 0.85, 0.85), _p("fees.md", 1, 0.80, 0.80)]  # score = similarity here
    out = ranked(with_other_languages(fused, others), 5)
    assert ("trees.md", 3) in [(p.source, p.chunk_index) for p in out]
    assert "fees.md" not in [p.source for p in out]  # 0.06 below the best: it would only push answers out
    # the ranking depends on the passages, not on the order they came in
    again = ranked(with_other_languages(list(reversed(fused)), others), 5)
    assert [(p.source, p.chunk_index) for p in again] == [(p.source, p.chunk_index) for p in out]
    # a passage both lists found rises
    both = ranked(with_other_languages([*fused, _p("trees.md", 3, 0.40, 0.85)], others), 5)
    assert both[0].source == "trees.md"
    assert with_other_languages(fused, others, weight=0) == fused


async def test_a_question_finds_the_answer_only_another_language_holds(permits_settings, monkeypatch):
    async with open_runtime(permits_settings) as rt:
        spanish = await search(rt, SPANISH, top_k=5)
        assert hit_rank(spanish, ["$45"]) is not None and hit_rank(spanish, ["$45"]) <= 3
        vietnamese = await search(rt, VIETNAMESE, top_k=5)
        assert hit_rank(vietnamese, ["Oregon white oak", "12 inches"]) is not None
        # the same search twice gives the same passages in the same order
        assert [(p.source, p.chunk_index) for p in await search(rt, SPANISH, top_k=5)] == [
            (p.source, p.chunk_index) for p in spanish]
        # without the other-language retriever the English page sinks below the Spanish guides
        monkeypatch.setattr(search_module, "CROSS_WEIGHT", 0.0)
        alone = await search(rt, SPANISH, top_k=5)
        rank_alone = hit_rank(alone, ["$45"])
        assert rank_alone is None or rank_alone > hit_rank(spanish, ["$45"])


async def test_with_a_model_the_query_is_also_searched_in_the_other_languages(permits_settings):
    prompts = load_prompts()
    model = ScriptedModel({"translations": [{"lang": "en", "query": ENGLISH}, {"lang": "vi", "query": ""}]})
    async with open_runtime(permits_settings) as rt:
        result = await get_formatted_context(rt, SPANISH, top_k=5, model=model, prompts=prompts)
    model.assert_done()
    prompt = model.calls[0].messages[0].content
    assert SPANISH in prompt and "en: English" in prompt and "vi: Vietnamese" in prompt
    assert "es: Spanish" not in prompt  # the question's own language is not asked for
    assert result.data[0].source == "tree-removal.md" and "$45" in (result.data[0].context or result.data[0].text)
    # the answer says where it comes from: the English page is marked, and the model told so
    assert 'source="tree-removal.md"' in result.text and 'lang="en"' in result.text
    assert "another language than the question (es)" in result.text


UNMARKED = "chat cay soi trang co can giay phep khong"  # VIETNAMESE typed without its marks


async def test_a_question_typed_without_marks_is_translated_into_every_language_of_the_base(permits_settings):
    """The language guess reads it as English; taken so, English was not asked for, and the
    English page that answers it was searched with words the embedder barely reads."""
    prompts = load_prompts()
    model = ScriptedModel({"translations": [{"lang": "en", "query": ENGLISH}, {"lang": "vi", "query": VIETNAMESE}]})
    async with open_runtime(permits_settings) as rt:
        result = await get_formatted_context(rt, UNMARKED, top_k=5, model=model, prompts=prompts)
    model.assert_done()
    prompt = model.calls[0].messages[0].content
    assert UNMARKED in prompt and "en: English" in prompt and "vi: Vietnamese" in prompt and "es: Spanish" in prompt
    assert "tree-removal.md" in [p.source for p in result.data[:3]]
    # the model is told the English page is in another language than the (Vietnamese) question
    assert 'source="tree-removal.md"' in result.text and "another language than the question (vi)" in result.text
    async with open_runtime(permits_settings) as rt:  # the query alone does not find it
        assert "tree-removal.md" not in [p.source for p in await search(rt, UNMARKED, top_k=5)]


async def test_a_failing_translation_leaves_the_search_as_it_was(permits_settings):
    prompts = load_prompts()
    failing = FunctionModel(lambda messages, response_model: ProviderError("HTTP 503", provider="fake"))
    async with open_runtime(permits_settings) as rt:
        plain = await get_formatted_context(rt, SPANISH, top_k=5)
        result = await get_formatted_context(rt, SPANISH, top_k=5, model=failing, prompts=prompts)
    assert len(failing.calls) == 1
    assert [p.source for p in result.data] == [p.source for p in plain.data]


def test_only_passages_in_another_language_are_marked():
    passages = [Passage(text="Fees", source="fees.md", lang="en", score=1.0),
                Passage(text="Tarifas", source="tarifas-es.md", lang="es", score=0.9)]
    text, _ = format_passages(passages, 5000, question_lang="es")
    assert 'source="fees.md" title="" section="" score="1.000" lang="en">' in text
    assert 'source="tarifas-es.md" title="" section="" score="0.900">' in text


def test_two_searches_matching_one_section_through_different_chunks_count_as_one_place():
    # a translation often matches another chunk of the section the original query found
    original = Passage(text="fees", source="trees.md", chunk_index=3, span=(2, 5), score=1.0, dense_score=0.80)
    translated = Passage(text="fee table", source="trees.md", chunk_index=4, span=(4, 4), score=1.0, dense_score=0.90)
    guide = Passage(text="guía", source="guia-es.md", chunk_index=1, score=1.0, dense_score=0.85)
    out = fuse([([original, guide], 1.0), ([translated, guide], 0.8)], 5)
    assert [p.source for p in out] == ["trees.md", "guia-es.md"]
    assert out[0].chunk_index == 4  # the place keeps its best-matching passage


async def test_a_turn_with_a_router_model_searches_the_translation_and_tells_the_model(permits_settings, llm_server):
    from agent.runtime import Runtime
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk, AskRequest

    def groq(request) -> dict:  # the translation and the router, in whichever order they come
        prompt = request.body["messages"][-1]["content"]
        if "Translate this search query" in prompt:
            return {"translations": [{"lang": "en", "query": ENGLISH}]}
        return {"route": "knowledge", "search_query": None}

    llm_server.script_default("groq", groq)
    llm_server.script("openai", {"step": {"kind": "final_answer", "answer": "Cuesta $45 [1].",
                                          "references": [{"source": "tree-removal.md"}], "confidence": 0.9}})
    settings = permits_settings.model_copy(update={"agent_model": "openai/gpt-4.1-mini", "llm_max_retries": 0,
                                                   "router_model": "groq/llama-3.1-8b-instant",
                                                   "translate_queries": True})
    runtime = Runtime.open(settings)
    service = Askdesk(settings, runtime, state=MemoryState())
    try:
        result = await service.answer(AskRequest(text=SPANISH))
    finally:
        await service.close()
        await runtime.close()
    assert result.answer.startswith("Cuesta $45")
    prompts = [r.body["messages"][-1]["content"] for r in llm_server.requests_for("groq")]
    assert any(SPANISH in p and "en: English" in p for p in prompts)  # the translation was asked for
    [agent] = llm_server.requests_for("openai")
    context = next(m["content"] for m in agent.body["messages"]
                   if m["content"].startswith('<tool_result name="get_formatted_context">'))
    assert 'source="tree-removal.md"' in context and 'lang="en"' in context and "$45" in context
