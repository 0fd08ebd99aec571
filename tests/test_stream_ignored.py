"""An OpenAI-compatible server that ignores `stream: true` and answers with one plain JSON
completion (older llama.cpp builds, some proxies). Before issue 20's fix: the SDK read no events
from it, the call failed, and every streamed answer became search-only. Then (until issue 31):
the provider asked once more without streaming and never asked that server to stream again,
for the life of the process — a proxy that buffered one response turned streaming off for good.
Now the plain JSON body is read as the call's one chunk (no second request), for that call
only: the next call asks to stream again. Real openai SDK against the fake LLM server."""

from __future__ import annotations

import logging

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


class Partials:
    def __init__(self) -> None:
        self.seen: list[object] = []

    async def __call__(self, partial) -> bool:
        self.seen.append(partial)
        return False


async def test_one_plain_json_reply_is_used_whole_and_the_next_call_streams_again(llm_server):
    llm_server.ignore_stream("compatible", times=1)  # a proxy that buffered one response
    llm_server.script("compatible", FINAL, FINAL)
    provider = CompatibleProvider()
    first, second = Partials(), Partials()
    try:
        one = await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=first)
        two = await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=second)
    finally:
        await provider.aclose()
    assert one.output.step.answer == two.output.step.answer == ANSWER
    assert (one.usage.requests, two.usage.requests) == (1, 1)  # the plain reply is used, not asked again
    assert one.usage.input_tokens > 0  # metered from the JSON body's usage
    assert len(first.seen) == 1 and len(second.seen) > 2  # whole, then token by token again
    assert [bool(r.body.get("stream")) for r in llm_server.requests_for("compatible")] == [True, True]
    assert [r.chunks != [] for r in llm_server.requests_for("compatible")] == [False, True]


async def test_a_server_that_never_streams_costs_one_request_a_call_and_one_warning(llm_server, caplog):
    llm_server.ignore_stream("compatible")
    llm_server.script("compatible", FINAL, FINAL, FINAL)
    provider = CompatibleProvider()
    try:
        with caplog.at_level(logging.WARNING, logger="askdesk.providers"):
            results = [await provider.stream(MESSAGES, AgentStep, model="qwen2.5", on_partial=Partials())
                       for _ in range(3)]
    finally:
        await provider.aclose()
    assert [c.output.step.answer for c in results] == [ANSWER] * 3
    assert [bool(r.body.get("stream")) for r in llm_server.requests_for("compatible")] == [True] * 3
    warnings = [r for r in caplog.records if "plain JSON" in r.getMessage()]
    assert len(warnings) == 1  # said once, not on every call


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
    assert len(streamed) == 2  # each turn asks the agent model to stream: one plain reply changes nothing
