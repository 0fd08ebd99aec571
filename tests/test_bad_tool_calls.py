"""A bad tool call never loses the search (issue 31). A model that calls an unknown tool or
passes arguments the tool's schema rejects is told once, as tool results, what was wrong and
what exists; if it errs again, or the turn reaches the step cap or its deadline, the user gets
the search-only answer with the sources the prefetched search found — the degrade path of
every other model fault (agent/turn/degrade.py).
Before: such a turn ended, after the cap's model calls, in "I couldn't finish finding an answer
to that…" without the passages. Real Askdesk over one sample document; scripted models (every
scripted step must be used) and the real openai SDK against the fake LLM server."""

from __future__ import annotations

import asyncio
import time

import pytest

from agent.config import Settings
from agent.prompts import default_prompts
from agent.providers.chain import ModelChain
from agent.providers.function import FunctionModel, ScriptedModel
from agent.providers.models import ServiceModels
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk, AskRequest
from tests.fakes.steps import final, search, tool_calls
from tests.knowledge_fixtures import SMALL_KB_DOC

QUESTION = "What is the maximum income for a family of 4 to be eligible for child care?"
UNAVAILABLE = default_prompts().render("model_unavailable")
SEARCH = "get_formatted_context"
ANSWER = final("A family of 4 can earn up to $92,041 a year [1].", SMALL_KB_DOC)
UNKNOWN = tool_calls(("search_web", {"query": "income limit family of 4"}))
INVALID = tool_calls((SEARCH, {"question": "income limit family of 4"}))  # the argument is `query`


async def ask(runtime, agent, *, on_text=None, **fields):
    settings = Settings(data_dir=runtime.settings.data_dir, **fields)
    service = Askdesk(settings, runtime, state=MemoryState(),
                      models=ServiceModels(router=None, agent=agent, notice=None))
    try:
        return await service.answer(AskRequest(text=QUESTION), on_text=on_text)
    finally:
        await service.close()


def sources(result) -> set[str]:
    return {r.source for r in result.references}


def tool_results(call) -> list[str]:
    """The tool messages a model call was sent after the question (what tools said this turn)."""
    messages = call.messages
    start = max(i for i, m in enumerate(messages) if m.role == "user")
    return [m.content for m in messages[start:] if m.role == "tool"]


def assert_search_only_with_sources(result) -> None:
    assert result.search_only, result.answer
    assert SMALL_KB_DOC in sources(result)
    assert result.answer.startswith(UNAVAILABLE)
    assert "$92,041" in result.answer or "1,770" in result.answer  # the passages themselves
    assert "couldn't finish" not in result.answer and "(reference " not in result.answer


@pytest.mark.parametrize("mistake", [UNKNOWN, INVALID], ids=["unknown tool", "invalid arguments"])
async def test_a_mistake_is_told_once_and_the_corrected_answer_cites_sources(kb_runtime, mistake):
    model = ScriptedModel(mistake, ANSWER)
    result = await ask(kb_runtime, model)
    model.assert_done()
    assert not result.search_only and result.answer.startswith("A family of 4 can earn up to $92,041")
    assert sources(result) == {SMALL_KB_DOC}
    assert result.llm_calls == 2
    assert result.tool_calls == [SEARCH]  # the prefetch; the mistaken call never ran
    (told,) = tool_results(model.calls[1])
    if mistake is UNKNOWN:
        assert told.startswith("ERROR: Unknown tool 'search_web'. Available tools:")
    else:
        assert told.startswith(f"ERROR: invalid arguments for {SEARCH}: query: Field required")
    assert f"{SEARCH}(query: string, required" in told  # what exists, with its arguments


@pytest.mark.parametrize("steps", [(INVALID, INVALID), (UNKNOWN, INVALID), (UNKNOWN, UNKNOWN)],
                         ids=["invalid twice", "unknown then invalid", "unknown twice"])
async def test_a_second_mistake_gets_the_search_only_answer_with_the_prefetched_sources(kb_runtime, steps):
    model = ScriptedModel(*steps)  # no third call: the turn does not ask again
    result = await ask(kb_runtime, model)
    model.assert_done()
    assert_search_only_with_sources(result)
    assert result.llm_calls == 2


async def test_a_step_mixing_a_good_call_and_a_mistake_runs_the_good_one(kb_runtime):
    model = ScriptedModel(tool_calls((SEARCH, {"query": "income limit family of 4"}), ("search_web", {"query": "x"})),
                          ANSWER)
    result = await ask(kb_runtime, model)
    model.assert_done()
    good, told = tool_results(model.calls[1])
    assert "<document" in good and told.startswith("ERROR: Unknown tool 'search_web'")
    assert result.tool_calls == [SEARCH, SEARCH] and not result.search_only


async def test_the_step_cap_gets_the_search_only_answer_with_sources(kb_runtime):
    model = ScriptedModel(search("income limit"), search("family of 4"), search("eligibility"))
    result = await ask(kb_runtime, model, max_iterations=3)
    model.assert_done()  # three model calls, no fourth
    assert_search_only_with_sources(result)
    assert result.llm_calls == 3


async def test_the_cap_also_ends_a_correction(kb_runtime):
    model = ScriptedModel(UNKNOWN)  # one step allowed: no room to correct it
    result = await ask(kb_runtime, model, max_iterations=1)
    model.assert_done()
    assert_search_only_with_sources(result)


async def test_the_deadline_during_the_correction_gets_the_search_only_answer_with_sources(kb_runtime):
    script: list = [UNKNOWN, "hang"]

    async def reply(messages, response_model):
        step = script.pop(0)
        if step == "hang":
            await asyncio.sleep(60)
        return step

    model = FunctionModel(reply)
    started = time.monotonic()
    result = await ask(kb_runtime, model, turn_timeout=3.0)
    assert time.monotonic() - started < 3.0 + 5.0  # a loaded 2-core machine adds seconds, never a minute
    assert not script and len(model.calls) == 2
    assert_search_only_with_sources(result)
    assert result.llm_calls == 2  # the call the deadline cut off is counted


async def test_streamed_a_second_mistake_shows_the_search_only_answer(kb_runtime):
    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    model = ScriptedModel(UNKNOWN, INVALID)
    result = await ask(kb_runtime, model, on_text=on_text, stream_answers=True)
    model.assert_done()
    assert_search_only_with_sources(result)
    assert shown == []  # tool-call steps show nothing: the surface renders the search-only answer whole


# --------------------------------------------------------------------------- the real openai SDK


async def test_through_the_openai_sdk_a_corrected_call_answers_with_sources(kb_runtime, llm_server):
    llm_server.script("openai", UNKNOWN, ANSWER)
    result = await ask(kb_runtime, ModelChain(["openai/gpt-4.1-mini"]))
    assert not result.search_only and sources(result) == {SMALL_KB_DOC}
    first, second = llm_server.requests_for("openai")
    assert "ERROR: Unknown tool" not in first.text
    assert "ERROR: Unknown tool 'search_web'. Available tools:" in second.text
    assert f"{SEARCH}(query: string, required" in second.text


async def test_through_the_openai_sdk_invalid_arguments_twice_get_the_sources(kb_runtime, llm_server):
    llm_server.script("openai", INVALID, INVALID)
    result = await ask(kb_runtime, ModelChain(["openai/gpt-4.1-mini"]))
    assert_search_only_with_sources(result)
    assert len(llm_server.requests_for("openai")) == 2  # and the fake checks nothing scripted was left
