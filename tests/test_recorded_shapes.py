"""Real provider replies as the reference (issue 31): every reply here has the shape of a
recorded response of the real API (tests/fakes/llm_shapes.py; where each was studied:
docs/provider-replies.md), served by the fake LLM server to the real openai, groq and
google-genai SDKs through askdesk's provider modules, and for a few through a whole turn.

What each must end in: the model's answer, or — when the model refused, was cut off or
blocked — a clear ProviderError that does not ask the same model again, so the chain moves
on and a turn ends in the next model's answer or the search-only answer with its sources.
Never a half answer presented as whole, never a traceback.
"""

from __future__ import annotations

import json

import pytest

from agent.config import Settings
from agent.messages import ChatMessage
from agent.providers.base import ProviderError
from agent.providers.chain import ModelChain
from agent.providers.compatible import CompatibleProvider
from agent.providers.gemini import GeminiProvider
from agent.providers.groq import GroqProvider
from agent.providers.openai import OpenAIProvider
from agent.providers.streaming import StreamFailed
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.turn.answer_stream import answer_so_far
from agent.turn.service import Askdesk, AskRequest
from agent.turn.steps import AgentStep, FinalAnswer, ToolCalls
from tests.fakes import llm_shapes as shapes

MESSAGES = [ChatMessage(role="system", content="Answer from documents."),
            ChatMessage(role="user", content="Who qualifies for child care aid?")]
# non-ASCII on purpose: sent as \u escapes, the stream splits them mid-escape
ANSWER = "Families earning up to 85% of state median income qualify — the Café rule applies too."
FINAL = {"step": {"kind": "final_answer", "answer": ANSWER, "references": [{"source": "elig.md"}],
                  "confidence": 0.8}}
TOOLS = {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context",
                                                   "arguments": {"query": "income limits"}}]}}
SECRET = "MARKER-31 the user's own words"  # in a failed generation: must never reach an error text


class Shown:
    """on_partial recording the answer text; True (shown) once there is some."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, partial) -> bool:
        text = answer_so_far(partial)
        if text:
            self.texts.append(text)
        return bool(text)


async def _never_shown(partial) -> bool:
    return False


async def _stream(provider, **kwargs):
    try:
        return await provider.stream(MESSAGES, AgentStep, model=kwargs.pop("model", "m"),
                                     on_partial=kwargs.pop("on_partial", _never_shown), **kwargs)
    finally:
        await provider.aclose()


async def _complete(provider, **kwargs):
    try:
        return await provider.complete(MESSAGES, AgentStep, model=kwargs.pop("model", "m"), **kwargs)
    finally:
        await provider.aclose()


def _events(rec) -> list[dict]:
    """The JSON events a streamed reply carried, as the client received them."""
    return [json.loads(data) for _, data in rec.chunks if data != "[DONE]"]


# --------------------------------------------------------------------------- OpenAI


async def test_openai_streamed_tool_call_split_mid_escape_with_usage_only_in_the_last_chunk(llm_server):
    llm_server.script("openai", shapes.openai_reply(FINAL, ascii_only=True))
    shown = Shown()
    completion = await _stream(OpenAIProvider(), model="gpt-4.1-mini", on_partial=shown)

    assert isinstance(completion.output.step, FinalAnswer) and completion.output.step.answer == ANSWER
    assert len(set(shown.texts)) > 5 and shown.texts[-1] == ANSWER
    events = _events(llm_server.requests[0])
    pieces = [e["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]
              for e in events[1:] if e["choices"] and e["choices"][0]["delta"].get("tool_calls")]
    assert "\\" in pieces and "".join(pieces) == json.dumps(FINAL)  # an escape split across chunks
    assert all(e["usage"] is None for e in events[:-1]) and events[-1]["choices"] == []
    usage = events[-1]["usage"]
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (
        usage["prompt_tokens"], usage["completion_tokens"])
    assert llm_server.requests[0].body["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_openai_tool_call_step_with_the_real_fields(llm_server, how):
    llm_server.script("openai", shapes.openai_reply(TOOLS))
    call = _complete if how == "complete" else _stream
    completion = await call(OpenAIProvider())
    assert isinstance(completion.output.step, ToolCalls)
    assert completion.output.step.calls[0].arguments == {"query": "income limits"}
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_openai_refusal_moves_on_without_asking_again(llm_server, how):
    """Before: 'output that does not fit the expected structure: AssertionError' (complete) or
    'ended the stream without output' (stream). Now the refusal is named; not re-asked."""
    llm_server.script("openai", shapes.openai_refusal())
    call = _complete if how == "complete" else _stream
    with pytest.raises(ProviderError) as err:
        await call(OpenAIProvider(), max_retries=2)
    assert "declined to answer" in str(err.value) and shapes.REFUSAL not in str(err.value)
    assert err.value.retryable and not err.value.same_provider
    assert len(llm_server.requests) == 1


async def test_openai_length_cut_in_a_stream_is_never_a_whole_answer(llm_server):
    """Before: the partial JSON `"answer": "Families earning up to 85% of st` validated (jiter
    closes the string) and the cut answer came back as complete."""
    llm_server.script("openai", shapes.openai_length(FINAL, cut=90))
    shown = Shown()
    with pytest.raises(StreamFailed) as err:
        await _stream(OpenAIProvider(), on_partial=shown)
    assert err.value.shown and "output token limit" in str(err.value)
    assert shown.texts and ANSWER.startswith(shown.texts[-1]) and shown.texts[-1] != ANSWER
    assert len(llm_server.requests) == 1


async def test_openai_length_not_streamed_names_the_cut(llm_server):
    llm_server.script("openai", shapes.openai_length(FINAL, cut=90))
    with pytest.raises(ProviderError) as err:
        await _complete(OpenAIProvider(), max_retries=2)
    assert "output token limit" in str(err.value) and not err.value.same_provider
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("mode", ["tools", "json"])
@pytest.mark.parametrize("flavour", ["zero_values", "gemini_openai"])
@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_compatible_gateways_zero_values_and_id_less_tool_calls(llm_server, mode, flavour, how):
    """Before: in tools mode, Snowflake Cortex's `refusal: ""` (a zero value, not a refusal)
    failed every call: instructor reads any non-None refusal as one. A streamed request gets the
    same plain JSON, which is read as the stream's one chunk."""
    llm_server.script("compatible", shapes.compatible_reply(FINAL, flavour))
    call = _complete if how == "complete" else _stream
    completion = await call(CompatibleProvider(mode=mode), model="claude-sonnet-4-6")
    assert completion.output.step.answer == ANSWER and completion.usage.requests == 1
    assert completion.usage.input_tokens > 0


# --------------------------------------------------------------------------- Groq


async def test_groq_stream_whole_tool_call_after_reasoning_usage_in_x_groq(llm_server):
    llm_server.script("groq", shapes.groq_reply(FINAL, reasoning="The user asks about income limits."))
    shown = Shown()
    completion = await _stream(GroqProvider(), model="openai/gpt-oss-120b", on_partial=shown)
    assert completion.output.step.answer == ANSWER and shown.texts[-1] == ANSWER
    finish = _events(llm_server.requests[0])[-1]
    assert finish["x_groq"]["usage"] == finish["usage"]
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (
        finish["usage"]["prompt_tokens"], finish["usage"]["completion_tokens"])


@pytest.mark.parametrize("kind", ["schema", "no_tool_call"])
@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_groq_tool_use_failed_is_asked_again_told_why(llm_server, kind, how):
    """Before: HTTP 400 was final ('rejected the request'; in a stream 'call failed: APIError')
    and the chain left Groq at once. Now the model is asked again with the API's reason."""
    llm_server.script("groq", shapes.groq_tool_use_failed(kind, generation=SECRET), shapes.groq_reply(FINAL))
    call = _complete if how == "complete" else _stream
    completion = await call(GroqProvider(), model="llama-3.1-8b-instant", max_retries=2)
    assert completion.output.step.answer == ANSWER and completion.usage.requests == 2
    first, second = llm_server.requests
    hint = second.body["messages"][-1]
    assert hint["role"] == "user" and "AgentStep" in hint["content"]
    assert (shapes.GROQ_NO_TOOL_CALL if kind == "no_tool_call" else "did not match schema") in hint["content"]
    assert SECRET not in second.text  # the failed generation is not sent back
    assert len(first.body["messages"]) == len(second.body["messages"]) - 1


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_groq_tool_use_failed_every_time_ends_without_quoting_the_generation(llm_server, how):
    llm_server.script("groq", *[shapes.groq_tool_use_failed("schema", generation={"query": SECRET})] * 2)
    call = _complete if how == "complete" else _stream
    with pytest.raises(ProviderError) as err:
        await call(GroqProvider(), max_retries=1)
    assert "tool_use_failed" in str(err.value) and SECRET not in str(err.value)
    assert err.value.retryable and len(llm_server.requests) == 2


# --------------------------------------------------------------------------- Gemini


async def test_gemini_function_call_with_thought_signature(llm_server):
    llm_server.script("gemini", shapes.gemini_reply(FINAL))
    completion = await _complete(GeminiProvider(), model="gemini-2.5-flash")
    assert completion.output.step.answer == ANSWER
    body = llm_server.requests[0].body
    assert body["toolConfig"]["functionCallingConfig"]["mode"] == "ANY"
    assert completion.usage.input_tokens > 0 and completion.usage.output_tokens > 0


async def test_gemini_sse_json_text_crlf_usage_only_at_the_end(llm_server):
    llm_server.script("gemini", shapes.gemini_reply(FINAL, chunk_chars=17))
    shown = Shown()
    completion = await _stream(GeminiProvider(), model="gemini-2.5-flash", on_partial=shown)
    assert completion.output.step.answer == ANSWER and len(set(shown.texts)) > 3
    request = llm_server.requests[0]
    assert request.path.endswith(":streamGenerateContent")
    events = _events(request)
    assert "candidatesTokenCount" not in events[0]["usageMetadata"]
    assert completion.usage.output_tokens == events[-1]["usageMetadata"]["candidatesTokenCount"]


async def test_the_fake_streams_a_gemini_function_call_as_the_api_does(llm_server):
    """askdesk streams Gemini in JSON mode; the function-call stream shape is checked against
    the SDK itself: the call whole in the first chunk, finishReason STOP in an empty-text one."""
    from google import genai
    from google.genai import types

    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=llm_server.url,
                                                                      api_version="v1beta"))
    llm_server.script("gemini", shapes.gemini_reply({"query": "income"}))
    tool = types.Tool(function_declarations=[types.FunctionDeclaration(
        name="search", parameters=types.Schema(type="OBJECT", properties={"query": types.Schema(type="STRING")}))])
    chunks = [c async for c in await client.aio.models.generate_content_stream(
        model="gemini-3-pro-preview", contents="income?", config=types.GenerateContentConfig(tools=[tool]))]
    await client.aio.aclose()
    assert chunks[0].function_calls[0].args == {"query": "income"}
    assert chunks[0].candidates[0].content.parts[0].thought_signature
    assert chunks[-1].candidates[0].finish_reason == types.FinishReason.STOP


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_gemini_blocked_prompt_moves_on_without_asking_again(llm_server, how):
    llm_server.script("gemini", shapes.gemini_prompt_blocked("SAFETY"))
    call = _complete if how == "complete" else _stream
    with pytest.raises(ProviderError) as err:
        await call(GeminiProvider(), max_retries=2)
    assert len(llm_server.requests) == 1
    if how == "stream":  # (not streamed, retry.py names it "an empty response")
        assert "blocked the prompt" in str(err.value) and "SAFETY" in str(err.value)


@pytest.mark.parametrize("shape", ["safety", "max_tokens"])
async def test_gemini_candidate_without_parts_is_named_not_reasked(llm_server, shape):
    """Before: 'gemini call failed: TypeError' (instructor iterated the missing parts)."""
    llm_server.script("gemini", shapes.gemini_safety_stop() if shape == "safety" else shapes.gemini_max_tokens())
    with pytest.raises(ProviderError) as err:
        await _complete(GeminiProvider(), max_retries=2)
    expected = "finishReason SAFETY" if shape == "safety" else "finishReason MAX_TOKENS"
    assert expected in str(err.value) and not err.value.same_provider
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("shape", ["safety", "max_tokens"])
async def test_gemini_stream_stopped_after_text_is_never_a_whole_answer(llm_server, shape):
    """Before: the text streamed so far validated as a complete answer and was returned."""
    step = (shapes.gemini_safety_stop(FINAL, after=95) if shape == "safety"
            else shapes.gemini_max_tokens(FINAL, cut=95))
    llm_server.script("gemini", step)
    shown = Shown()
    with pytest.raises(StreamFailed) as err:
        await _stream(GeminiProvider(), on_partial=shown)
    assert err.value.shown and shown.texts and shown.texts[-1] != ANSWER
    assert ("SAFETY" if shape == "safety" else "MAX_TOKENS") in str(err.value)


async def test_gemini_stream_blocked_before_any_text(llm_server):
    llm_server.script("gemini", shapes.gemini_safety_stop())
    with pytest.raises(ProviderError) as err:
        await _stream(GeminiProvider(), max_retries=2)
    assert "finishReason SAFETY" in str(err.value) and not err.value.shown
    assert len(llm_server.requests) == 1


# --------------------------------------------------------------------------- the chain


async def test_a_refusal_or_a_blocked_prompt_hands_over_to_the_next_model_at_once(llm_server):
    llm_server.script("openai", shapes.openai_refusal())
    llm_server.script("gemini", shapes.gemini_prompt_blocked("PROHIBITED_CONTENT"))
    llm_server.script("groq", shapes.groq_reply(FINAL))
    chain = ModelChain(["openai/gpt-4.1-mini", "gemini/gemini-2.5-flash", "groq/llama-3.3-70b-versatile"],
                       max_retries=2)
    try:
        completion = await chain.stream(MESSAGES, AgentStep, on_partial=_never_shown)
    finally:
        await chain.aclose()
    assert completion.output.step.answer == ANSWER and completion.usage.provider == "groq"
    assert [a.provider for a in completion.attempts] == ["openai", "gemini", "groq"]
    assert [r.provider for r in llm_server.requests] == ["openai", "gemini", "groq"]


# --------------------------------------------------------------------------- whole turns

QUESTION = "What is the maximum income for a family of 4 to be eligible for child care?"
TURN_ANSWER = "A family of 4 qualifies up to the income limit in the chart [1]."


@pytest.fixture
async def turn(kb_settings, tmp_path):
    """ask(agent_model, **settings) -> (result, the text the surface was shown)."""
    runtime = Runtime.open(kb_settings)
    services: list[Askdesk] = []

    async def ask(agent_model: str, **fields):
        settings = Settings(data_dir=tmp_path / f"svc{len(services)}", agent_model=agent_model,
                            router_model="compatible/router", llm_max_retries=1, **fields)
        service = Askdesk(settings, runtime, state=MemoryState())
        services.append(service)
        shown: list[str] = []

        async def on_text(text: str) -> None:
            shown.append(text)

        result = await service.answer(AskRequest(text=QUESTION), on_text=on_text)
        return result, "".join(shown)

    yield ask
    for service in services:
        await service.close()
    await runtime.close()


def _final(answer: str = TURN_ANSWER) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "references": [], "confidence": 0.8}}


async def test_turn_openai_stream_tool_call_then_streamed_answer(turn, llm_server):
    llm_server.script("openai", shapes.openai_reply(TOOLS), shapes.openai_reply(_final()))
    result, shown = await turn("openai/gpt-4.1-mini")
    assert not result.search_only and result.answer == TURN_ANSWER
    assert shown == result.answer and result.references
    assert result.tool_calls[-1] == "get_formatted_context" and result.llm_calls == 2
    assert all(r.body["stream"] for r in llm_server.requests_for("openai"))


async def test_turn_openai_refusal_gives_the_search_results_with_sources(turn, llm_server):
    llm_server.script("openai", shapes.openai_refusal())
    result, _ = await turn("openai/gpt-4.1-mini")
    assert result.search_only and result.references
    assert result.answer.startswith("The language model is not answering right now")
    assert shapes.REFUSAL not in result.answer
    assert len(llm_server.requests_for("openai")) == 1


async def test_turn_gemini_safety_mid_answer_keeps_the_text_and_adds_the_search_results(turn, llm_server):
    long = _final("A family of 4 may earn up to the limit shown in the BCY 2026 chart, " * 3)
    llm_server.script("gemini", shapes.gemini_safety_stop(long, after=150))
    result, shown = await turn("gemini/gemini-2.5-flash")
    assert shown == result.answer  # the surface shows exactly the turn's answer
    written, note, rest = result.answer.partition("\n\n_(The answer above is incomplete")
    assert note and written.startswith("A family of 4 may earn") and len(written) < 150  # the cut text stays
    assert "$1,770" in rest and result.search_only and result.references  # then the documents, with sources
    assert len(llm_server.requests_for("gemini")) == 1


async def test_turn_groq_tool_use_failed_then_the_answer(turn, llm_server):
    llm_server.script("groq", shapes.groq_tool_use_failed("no_tool_call"), shapes.groq_reply(_final()))
    result, shown = await turn("groq/llama-3.3-70b-versatile")
    assert not result.search_only and result.answer == TURN_ANSWER and shown == result.answer
    assert len(llm_server.requests_for("groq")) == 2 and result.llm_calls == 1


async def test_turn_gemini_blocked_prompt_falls_back_to_the_next_model(turn, llm_server):
    llm_server.script("gemini", shapes.gemini_prompt_blocked("SAFETY"))
    llm_server.script("openai", shapes.openai_reply(_final()))
    result, shown = await turn("gemini/gemini-2.5-flash", fallback_models=["openai/gpt-4.1-mini"])
    assert not result.search_only and result.answer == TURN_ANSWER and shown == TURN_ANSWER
    assert result.llm_calls == 2  # the blocked attempt counts
