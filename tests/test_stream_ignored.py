"""An OpenAI-compatible server that ignores `stream: true` and answers with one plain JSON
completion (older llama.cpp builds, some proxies). Before: the SDK read no events from it, the
call failed, and every streamed answer became search-only. Now the provider asks once more
without streaming and remembers that this server does not stream. Real openai SDK against the
fake LLM server."""

from __future__ import annotations

from agent.config import Settings
from agent.messages import ChatMessage
from agent.providers.compatible import CompatibleProvider
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk, AskRequest
from agent.turn.steps import AgentStep

ANSWER = "Families earning up to 85% of the state median income qualify; apply through your local board."
FINAL = {"step": {"kind": "final_answer", "answer": ANSWER, "references": [], "confidence": 0.8}}
MESSAGES = [ChatMessage(role="system", content="Answer from documents."),
            ChatMessage(role="user", content="Who qualifies for child care aid?")]


async def _never_shown(partial) -> bool:
    return False


async def test_the_provider_asks_once_more_without_streaming_and_remembers(llm_server):
    llm_server.ignore_stream("compatible")
    llm_server.script("compatible", FINAL, FINAL, FINAL, FINAL)
    provider = CompatibleProvider()
    try:
        first = await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=_never_shown)
        second = await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=_never_shown)
        third = await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=_never_shown)
    finally:
        await provider.aclose()
    assert [c.output.step.answer for c in (first, second, third)] == [ANSWER] * 3
    asked_to_stream = [bool(r.body.get("stream")) for r in llm_server.requests_for("compatible")]
    assert asked_to_stream == [True, False, False, False]  # one streamed try, then never again
    assert (first.usage.requests, second.usage.requests) == (2, 1)  # the ignored stream is counted


async def test_a_server_that_streams_is_still_streamed(llm_server):
    llm_server.script("compatible", FINAL, FINAL)
    provider = CompatibleProvider()
    seen: list[object] = []

    async def on_partial(partial) -> bool:
        seen.append(partial)
        return False

    try:
        for _ in range(2):
            await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=on_partial)
    finally:
        await provider.aclose()
    assert [bool(r.body.get("stream")) for r in llm_server.requests_for("compatible")] == [True, True]
    assert len(seen) > 2 and provider.streams


async def test_streamed_turns_get_the_models_answer_not_search_only(kb_settings, llm_server, tmp_path):
    llm_server.check_complete = False  # whether the router model is asked is the router's business
    llm_server.ignore_stream("compatible")
    llm_server.script_default("compatible", FINAL)
    settings = Settings(data_dir=tmp_path / "svc", agent_model="compatible/qwen2.5", router_model="compatible/qwen2.5")
    runtime = Runtime.open(kb_settings)
    service = Askdesk(settings, runtime, state=MemoryState())
    shown: list[str] = []

    async def on_text(text: str) -> None:
        shown.append(text)

    try:
        results = [await service.answer(AskRequest(text="who is eligible for child care assistance?",
                                                   thread_id=f"t{i}"), on_text=on_text) for i in range(2)]
    finally:
        await service.close()
        await runtime.close()
    for result in results:
        assert not result.search_only and result.answer == ANSWER
    assert "".join(shown) == ANSWER * 2  # the surface got the text even though nothing streamed
    streamed = [r for r in llm_server.requests_for("compatible") if r.body.get("stream")]
    assert len(streamed) == 1  # the agent model was asked to stream once, in the first turn
