"""Provider streaming: the real SDKs read server-sent events from the fake LLM server and
instructor's Partial parsing turns them into growing answers; the chain keeps what was
shown when a model fails mid-answer."""

from __future__ import annotations

import json

import httpx
import pytest
from pydantic import BaseModel

from agent.turn.answer_stream import AnswerText, answer_so_far
from agent.tools.formatted_context import reference_of
from agent.turn.citations import Citations, MarkerFilter
from agent.knowledge.search import Passage
from agent.messages import ChatMessage
from agent.providers.base import ProviderError
from agent.providers.chain import ModelChain
from agent.providers.compatible import CompatibleProvider
from agent.providers.gemini import GeminiProvider
from agent.providers.groq import GroqProvider
from agent.providers.openai import OpenAIProvider
from agent.providers.streaming import StreamFailed
from agent.references import Reference
from agent.turn.steps import AgentStep, FinalAnswer, ToolCalls
from tests.fakes import Stream

MESSAGES = [ChatMessage(role="system", content="Answer from documents."),
            ChatMessage(role="user", content="Who qualifies for child care aid?")]
ANSWER = "Families earning up to 85% of state median income qualify [1]. Apply through the local board."
FINAL = {"step": {"kind": "final_answer", "answer": ANSWER, "references": [{"source": "elig.md", "section": "Income"}],
                  "confidence": 0.8}}
TOOLS = {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context", "arguments": {"query": "income"}}]}}

PROVIDERS = {
    "openai": (lambda: OpenAIProvider(), "gpt-4.1-mini"),
    "groq": (lambda: GroqProvider(), "llama-3.3-70b-versatile"),
    "compatible": (lambda: CompatibleProvider(), "qwen2.5"),  # JSON mode: content deltas
    "gemini": (lambda: GeminiProvider(), "gemini-2.5-flash"),  # JSON mode over streamGenerateContent
}


def passage(source: str, section: str = "") -> Passage:
    return Passage(text="...", source=source, section=section, score=0.9)


class Texts:
    """on_partial that records the answer text of every partial."""

    def __init__(self) -> None:
        self.texts: list[str | None] = []

    async def __call__(self, partial) -> bool:
        self.texts.append(answer_so_far(partial))
        return bool(self.texts[-1])

    @property
    def answers(self) -> list[str]:
        return [t for t in self.texts if t]


@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_final_answer_streams_as_it_grows(llm_server, name):
    make, model = PROVIDERS[name]
    llm_server.script(name, FINAL, input_tokens=200, output_tokens=40)
    provider = make()
    seen = Texts()
    try:
        completion = await provider.stream(MESSAGES, AgentStep, model=model, on_partial=seen)
    finally:
        await provider.aclose()

    step = completion.output.step
    assert isinstance(step, FinalAnswer) and step.answer == ANSWER
    # the answer arrived in many growing pieces, each extending the last
    assert len(set(seen.answers)) > 10
    assert all(b.startswith(a) for a, b in zip(seen.answers, seen.answers[1:]))
    assert seen.answers[-1] == ANSWER
    # one request, metered from the stream's own usage
    assert (completion.usage.provider, completion.usage.requests) == (name, 1)
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (200, 40)
    request = llm_server.requests[0]
    if name == "gemini":
        assert request.path.endswith(":streamGenerateContent")
        assert request.body["generationConfig"]["responseMimeType"] == "application/json"
    else:
        assert request.body["stream"] is True


@pytest.mark.parametrize("name", ["openai", "gemini"])
async def test_tool_call_step_shows_no_text(llm_server, name):
    make, model = PROVIDERS[name]
    llm_server.script(name, TOOLS)
    provider = make()
    seen = Texts()
    try:
        completion = await provider.stream(MESSAGES, AgentStep, model=model, on_partial=seen)
    finally:
        await provider.aclose()
    assert isinstance(completion.output.step, ToolCalls)
    assert completion.output.step.calls[0].arguments == {"query": "income"}
    assert seen.texts and seen.answers == []


async def test_failure_before_any_text_is_retried_after_text_it_is_not(llm_server):
    # cut inside the JSON preamble: nothing was shown, so the provider tries again
    llm_server.script("openai", Stream(FINAL, cut_after=20), FINAL)
    provider = OpenAIProvider()
    seen = Texts()
    completion = await provider.stream(MESSAGES, AgentStep, model="m", on_partial=seen)
    assert completion.output.step.answer == ANSWER and completion.usage.requests == 2

    # cut inside the answer: the text already shown must not be repeated by a retry
    llm_server.script("openai", Stream(FINAL, cut_after=80))
    seen = Texts()
    with pytest.raises(StreamFailed) as err:
        await provider.stream(MESSAGES, AgentStep, model="m", on_partial=seen)
    await provider.aclose()
    assert err.value.shown and err.value.retryable
    assert seen.answers and ANSWER.startswith(seen.answers[-1]) and seen.answers[-1] != ANSWER
    assert len(llm_server.requests) == 3


async def test_stalled_stream_times_out(llm_server):
    llm_server.script("groq", Stream(FINAL, stall_after=60, stall=3.0))
    provider = GroqProvider()
    with pytest.raises(ProviderError, match="within 0.5"):
        await provider.stream(MESSAGES, AgentStep, model="m", on_partial=Texts(), timeout=0.5, max_retries=0)
    await provider.aclose()


async def test_chain_keeps_shown_text_notes_it_and_falls_back(llm_server):
    llm_server.script("openai", Stream(FINAL, cut_after=80))
    second = {"step": FINAL["step"] | {"answer": "Backup answer [1]."}}
    llm_server.script("groq", second)
    chain = ModelChain(["openai/gpt-4.1-mini", "groq/llama-3.3-70b-versatile"], max_retries=1)
    citations = Citations()
    citations.number('<document index="1" source="elig.md">', [passage("elig.md", "Income")])
    sink: list[str] = []

    async def on_text(delta: str) -> None:
        sink.append(delta)

    text = AnswerText(on_text, citations)
    notes: list[tuple[str, bool]] = []

    async def on_interrupt(error: ProviderError, more: bool) -> None:
        notes.append((error.provider, more))
        await text.note("(cut off; backup answer:)")

    completion = await chain.stream(MESSAGES, AgentStep, on_partial=text.on_partial, on_interrupt=on_interrupt)
    turn = completion.attempts
    whole = await text.finish(completion.output.step.answer)
    await chain.aclose()

    assert notes == [("openai", True)]
    assert [(u.provider, u.error is not None) for u in turn] == [("openai", True), ("groq", False)]
    first, rest = whole.split("\n\n(cut off; backup answer:)\n\n")
    assert ANSWER.startswith(first) and len(first) > 10  # what was shown stays
    assert rest == "Backup answer [1]."
    assert "".join(sink) == whole


def test_marker_filter_renumbers_by_appearance_and_drops_unknown_markers():
    citations = Citations()
    text = citations.number('<document index="1" source="a.md">x</document><document index="2" source="b.md">',
                            [passage("a.md", "A"), passage("b.md", "B")])
    assert text.count('index="1"') == 1
    # a second search in the same turn continues the numbering
    assert 'index="3"' in citations.number('<document index="1" source="c.md">', [passage("c.md")])
    f = MarkerFilter(citations)
    pieces = ["  First [", "2] then [3", "][2]. Invented [9]. A [link](x) and [1", "0] end [1]  \n"]
    out = "".join(f.feed(p) for p in pieces) + f.flush()
    assert out == "First [1] then [2][1]. Invented. A [link](x) and end [3]"
    assert [r.source for r in citations.cited] == ["b.md", "c.md", "a.md"]


async def test_fake_server_sse_wire_formats():
    from tests.fakes import FakeLLMServer

    with FakeLLMServer() as srv:
        srv.script("openai", {"x": 1})
        srv.script("groq", {"x": 2})
        srv.script("gemini", "plain text")
        body = {"model": "m", "messages": [], "stream": True, "stream_options": {"include_usage": True},
                "tools": [{"type": "function", "function": {"name": "Out"}}]}
        async with httpx.AsyncClient() as client:
            lines = (await client.post(f"{srv.url}/v1/chat/completions", json=body)).text.split("\n\n")
            events = [json.loads(x[6:]) for x in lines if x.startswith("data: {")]
            args = "".join(e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
                           for e in events if e["choices"] and "tool_calls" in e["choices"][0]["delta"])
            assert json.loads(args) == {"x": 1}
            assert events[-1]["choices"] == [] and events[-1]["usage"]["completion_tokens"] > 0
            assert lines[-2] == "data: [DONE]"
            groq = (await client.post(f"{srv.url}/openai/v1/chat/completions",
                                      json={"model": "m", "messages": [], "stream": True})).text
            last = [json.loads(x[6:]) for x in groq.split("\n\n") if x.startswith("data: {")][-1]
            assert last["x_groq"]["usage"]["prompt_tokens"] > 0
            gemini = (await client.post(f"{srv.url}/v1beta/models/g:streamGenerateContent?alt=sse",
                                        json={"contents": []})).text
            parts = [json.loads(x[6:])["candidates"][0]["content"]["parts"][0]["text"]
                     for x in gemini.split("\n\n") if x.startswith("data: ")]
            assert "".join(parts) == "plain text"
        assert len(srv.requests[0].chunks) > 1
        srv.assert_complete()


def test_reference_equality_in_cited():
    # the same (source, section) cited through two document numbers is one source
    citations = Citations()
    citations.number('<document index="1"><document index="2">', [reference_of(passage("a.md", "S"))] * 2)
    f = MarkerFilter(citations)
    assert f.feed("x [1] y [2]") + f.flush() == "x [1] y [1]"
    assert citations.cited == [Reference(source="a.md", section="S", score=0.9)]
    assert f.feed(" in [2024] and [x]") + f.flush() == " in [2024] and [x]"  # not markers: kept as written


async def test_loop_numbers_documents_turn_wide_and_cites_only_what_tools_returned():
    """Through the loop with the shipped ScriptedModel (no stream method: the text arrives whole)."""
    from agent.capabilities.base import Found
    from agent.turn.loop import run_agent
    from agent.prompts import default_prompts
    from agent.providers.function import ScriptedModel
    from agent.tools.base import Tool, ToolRegistry, ToolResult
    from agent.tools.formatted_context import format_passages

    first, second = [passage("a.md", "A"), passage("b.md", "B")], [passage("c.md", "C")]

    def result_of(passages) -> ToolResult:
        return ToolResult(text=format_passages(passages, 10_000)[0], data=passages,
                          documents=[reference_of(p) for p in passages],
                          references=[Reference(source=p.source, section=p.section) for p in passages])

    class Args(BaseModel):
        query: str

    async def search(args: Args) -> ToolResult:
        """Search."""
        return result_of(second)

    registry = ToolRegistry()
    registry.register(Tool(name="get_formatted_context", args_model=Args, fn=search))
    model = ScriptedModel(
        {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context", "arguments": {"query": "c"}}]}},
        {"step": {"kind": "final_answer", "answer": "C holds [3], B too [2][9].", "references": [], "confidence": 0.7}})
    shown: list[str] = []

    async def sink(delta: str) -> None:
        shown.append(delta)

    run = await run_agent(model=model, registry=registry, prompts=default_prompts(), question="q", history=[],
                          found=[Found("knowledge", "get_formatted_context", {"query": "q"}, result_of(first))],
                          max_iterations=3, domain="test", answer=AnswerText(sink))
    # the second search's document was shown to the model as index 3, not 1 again
    assert 'index="3" source="c.md"' in model.calls[1].messages[-1].content
    assert run.answer == "C holds [1], B too [2]." == "".join(shown)
    assert [(r.source, r.section) for r in run.references] == [("c.md", "C"), ("b.md", "B")]
