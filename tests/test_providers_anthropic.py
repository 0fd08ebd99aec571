"""Anthropic through the real `anthropic` SDK and instructor against the fake Messages API
(tests/fakes/anthropic_api.py, shapes studied in recordings of the real API), and providers as
plug-ins: every provider is a class found through the `askdesk.plugins` entry points, so one
that a third party registers is usable by `ASKDESK_AGENT_MODEL=<name>/<model>` with no line
of agent/ changed."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest

from agent.config import Settings
from agent.messages import ChatMessage
from agent.plugins import load_plugins
from agent.providers.anthropic import AnthropicProvider, to_anthropic_messages
from agent.providers.base import ModelStopped, ProviderConfigError, ProviderError, ProviderNotConfigured
from agent.providers.chain import ModelChain
from agent.providers.factory import default_spec, parse_spec, provider_table, providers_from, registered
from agent.providers.streaming import StreamFailed
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.turn.answer_stream import answer_so_far
from agent.turn.service import Askdesk, AskRequest
from agent.turn.steps import AgentStep, FinalAnswer, ToolCalls
from tests import canned_provider
from tests.conftest import REPO
from tests.fakes import Stream
from tests.fakes.anthropic_api import (anthropic_max_tokens, anthropic_refusal, anthropic_reply,
                                      anthropic_stream_error)

MESSAGES = [ChatMessage(role="system", content="Answer from documents."),
            ChatMessage(role="user", content="Who qualifies for child care aid?"),
            ChatMessage(role="assistant", content="Let me look that up."),
            ChatMessage(role="tool", name="get_formatted_context", content="[1] elig.md: income limits")]
# non-ASCII on purpose: the stream splits the arguments anywhere, escapes included
ANSWER = "Families earning up to 85% of state median income qualify — the Café rule applies too."
FINAL = {"step": {"kind": "final_answer", "answer": ANSWER, "references": [{"source": "elig.md"}],
                  "confidence": 0.8}}
TOOLS = {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context",
                                                   "arguments": {"query": "income limits"}}]}}
SPEC = "anthropic/claude-sonnet-4-6"
SDKS = ("anthropic", "openai", "groq", "google.genai", "instructor", "tenacity")


class Shown:
    """on_partial recording the answer text; True (shown) once there is some."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    async def __call__(self, partial) -> bool:
        text = answer_so_far(partial)
        if text:
            self.texts.append(text)
        return bool(text)


async def _stream(provider=None, **kwargs):
    provider = provider or AnthropicProvider()
    try:
        return await provider.stream(MESSAGES, AgentStep, model=kwargs.pop("model", "claude-sonnet-4-6"),
                                     on_partial=kwargs.pop("on_partial", Shown()), **kwargs)
    finally:
        await provider.aclose()


async def _complete(provider=None, **kwargs):
    provider = provider or AnthropicProvider()
    try:
        return await provider.complete(MESSAGES, AgentStep, model=kwargs.pop("model", "claude-sonnet-4-6"), **kwargs)
    finally:
        await provider.aclose()


def _events(rec) -> list[dict]:
    return [json.loads(data) for _, data in rec.chunks if data.startswith("{")]


@pytest.fixture
def all_logs(caplog):
    """Every record of every logger, at DEBUG (libraries' own levels lowered too)."""
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        if logging.getLogger(name).level > logging.DEBUG:
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def _warnings(caplog) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno == logging.WARNING]


def _assert_no_error(caplog) -> None:
    errors = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
    assert not [r.name for r in caplog.records if r.exc_info or r.exc_text] and "Traceback" not in caplog.text


# --------------------------------------------------------------------------- the wire


async def test_a_tool_use_reply_through_the_sdk(llm_server):
    llm_server.script("anthropic", FINAL, input_tokens=120, output_tokens=30)
    completion = await _complete()

    assert isinstance(completion.output.step, FinalAnswer) and completion.output.step.answer == ANSWER
    usage = completion.usage
    assert (usage.provider, usage.model, usage.input_tokens, usage.output_tokens, usage.requests) == (
        "anthropic", "claude-sonnet-4-6", 120, 30, 1)
    request = llm_server.requests[0]
    assert request.path == "/v1/messages" and request.headers["anthropic-version"]
    assert "test-anthropic-key" in request.headers.get("x-api-key", request.headers.get("authorization", ""))
    body = request.body
    assert body["tool_choice"]["type"] == "tool" and body["tool_choice"]["name"] == "AgentStep"
    assert body["tools"][0]["name"] == "AgentStep" and "input_schema" in body["tools"][0]
    assert body["max_tokens"] == AnthropicProvider.max_tokens and body["system"] == "Answer from documents."
    # roles alternate, the tool result is tagged user text after the assistant's turn
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
    assert body["messages"][2]["content"].startswith('<tool_result name="get_formatted_context">')


def test_messages_follow_the_apis_rules():
    system, turns = to_anthropic_messages([
        ChatMessage(role="system", content="Be brief."), ChatMessage(role="assistant", content="Hi!"),
        ChatMessage(role="user", content="a"), ChatMessage(role="user", content=""),
        ChatMessage(role="tool", name="t", content="r")])
    assert system == "Be brief."
    assert [t["role"] for t in turns] == ["user", "assistant", "user"]  # starts with the user's, alternates
    assert all(t["content"].strip() for t in turns)  # no empty text block
    assert turns[2]["content"].startswith("a\n\n") and "<tool_result" in turns[2]["content"]
    assert to_anthropic_messages([ChatMessage(role="system", content="Route this.")]) == (
        None, [{"role": "user", "content": "Route this."}])


async def test_a_streamed_answer_grows_from_input_json_deltas(llm_server):
    llm_server.script("anthropic", anthropic_reply(FINAL))
    shown = Shown()
    completion = await _stream(on_partial=shown)

    assert isinstance(completion.output.step, FinalAnswer) and completion.output.step.answer == ANSWER
    assert len(set(shown.texts)) > 5 and shown.texts[-1] == ANSWER
    assert all(b.startswith(a) for a, b in zip(shown.texts, shown.texts[1:]))
    request = llm_server.requests[0]
    assert request.body["stream"] is True
    events = _events(request)
    kinds = [e["type"] for e in events]
    assert kinds[:3] == ["message_start", "content_block_start", "ping"]
    assert kinds[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    pieces = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
    assert pieces[0] == "" and "".join(pieces) == json.dumps(FINAL, ensure_ascii=False) and len(pieces) > 10
    # input tokens from message_start, output tokens from message_delta (whose usage has only those)
    start, delta = events[0]["message"]["usage"], events[-2]["usage"]
    assert set(delta) == {"output_tokens"} and start["output_tokens"] == 1
    assert (completion.usage.input_tokens, completion.usage.output_tokens, completion.usage.requests) == (
        start["input_tokens"], delta["output_tokens"], 1)


async def test_a_paced_stream_is_metered_like_a_whole_reply(llm_server):
    llm_server.script("anthropic", FINAL, input_tokens=200, output_tokens=40)
    shown = Shown()
    completion = await _stream(on_partial=shown)
    assert completion.output.step.answer == ANSWER and len(set(shown.texts)) > 10
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (200, 40)


async def test_a_stream_cut_before_any_text_is_retried_after_text_it_is_not(llm_server):
    llm_server.script("anthropic", Stream(FINAL, cut_after=20), FINAL)
    completion = await _stream(max_retries=2)
    assert completion.output.step.answer == ANSWER and completion.usage.requests == 2
    llm_server.script("anthropic", Stream(FINAL, cut_after=90))
    with pytest.raises(StreamFailed) as err:
        await _stream(max_retries=2)
    assert err.value.shown and len(llm_server.requests) == 3


async def test_a_streamed_tool_call_shows_no_text(llm_server):
    llm_server.script("anthropic", TOOLS)
    shown = Shown()
    completion = await _stream(on_partial=shown)
    assert isinstance(completion.output.step, ToolCalls)
    assert completion.output.step.calls[0].arguments == {"query": "income limits"} and shown.texts == []


def test_without_a_key_it_names_the_variable():
    with pytest.raises(ProviderNotConfigured, match="set ANTHROPIC_API_KEY"):
        AnthropicProvider()
    assert AnthropicProvider.missing_env() == ["ANTHROPIC_API_KEY"]


def test_without_its_sdk_a_provider_is_not_configured(monkeypatch):
    """The SDK is imported when the provider is built: a missing package is a configuration
    problem of that spec (the chain skips it), not a crash of the service."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    monkeypatch.setitem(sys.modules, "anthropic", None)  # `import anthropic` raises ImportError
    chain = ModelChain([SPEC])
    assert not chain.configured and "Anthropic needs a package that is not installed: anthropic" in chain.missing[0]


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_overloaded_then_the_answer_is_one_warning_and_no_error(llm_server, all_logs, how):
    llm_server.script_error("anthropic", 529)
    llm_server.script("anthropic", FINAL)
    call = _complete if how == "complete" else _stream
    completion = await call(max_retries=2)

    assert completion.output.step.answer == ANSWER and completion.usage.requests == 2
    _assert_no_error(all_logs)
    (line,) = _warnings(all_logs)
    assert line.startswith("askdesk.providers: anthropic/claude-sonnet-4-6 attempt 1 of 3 failed (HTTP 529); "
                           "retrying in ")
    assert "Overloaded" not in line  # the API's message is not logged


async def test_overloaded_inside_a_200_stream_is_retried(llm_server, all_logs):
    """The SDK raises an `event: error` with the stream's status, 200, which the generic rules
    would not retry; the Anthropic module says `overloaded_error` is worth it."""
    llm_server.script("anthropic", anthropic_stream_error("overloaded_error"), FINAL)
    completion = await _stream(max_retries=2)
    assert completion.output.step.answer == ANSWER and len(llm_server.requests) == 2
    _assert_no_error(all_logs)
    (line,) = _warnings(all_logs)
    assert "attempt 1 of 3 failed (overloaded_error); retrying in" in line


async def test_rate_limited_with_retry_after(llm_server, all_logs):
    llm_server.script_error("anthropic", 429, message="Number of request tokens has exceeded your rate limit",
                            headers={"retry-after": "0"})
    llm_server.script("anthropic", FINAL)
    completion = await _complete()
    assert completion.usage.requests == 2
    assert "failed (HTTP 429, Retry-After 0 s); retrying in" in _warnings(all_logs)[0]
    # asked to wait longer than ASKDESK_LLM_RETRY_AFTER_CAP: not retried, the chain moves on
    llm_server.script_error("anthropic", 429, headers={"retry-after": "3600"})
    with pytest.raises(ProviderError) as err:
        await _complete()
    assert err.value.retryable and len(llm_server.requests) == 3


async def test_an_invalid_request_is_not_retried(llm_server):
    llm_server.script_error("anthropic", 400, message="max_tokens: 100000 > 64000, the maximum for this model")
    with pytest.raises(ProviderError) as err:
        await _complete(max_retries=2)
    assert not err.value.retryable and "HTTP 400" in str(err.value) and len(llm_server.requests) == 1


async def test_a_rejected_key_names_its_variable(llm_server):
    llm_server.script_error("anthropic", 401, message="invalid x-api-key")
    with pytest.raises(ProviderConfigError) as err:
        await _complete(max_retries=2)
    assert err.value.key_env == "ANTHROPIC_API_KEY" and len(llm_server.requests) == 1


# --------------------------------------------------------------------------- replies that are not an answer


async def test_max_tokens_not_streamed_names_the_cut_and_is_not_asked_again(llm_server):
    llm_server.script("anthropic", anthropic_max_tokens(FINAL, cut=90))
    with pytest.raises(ModelStopped) as err:
        await _complete(max_retries=2)
    assert "output token limit (stop_reason max_tokens)" in str(err.value) and not err.value.same_provider
    assert len(llm_server.requests) == 1


async def test_max_tokens_in_a_stream_is_never_a_whole_answer(llm_server):
    """jiter's partial mode closes the cut string, so `"answer": "Families earning up to 8` would
    validate: the stop reason in message_delta makes it an error, keeping what was shown."""
    llm_server.script("anthropic", anthropic_max_tokens(FINAL, cut=90))
    shown = Shown()
    with pytest.raises(StreamFailed) as err:
        await _stream(on_partial=shown)
    assert err.value.shown and "output token limit" in str(err.value)
    assert shown.texts and ANSWER.startswith(shown.texts[-1]) and shown.texts[-1] != ANSWER
    assert len(llm_server.requests) == 1


@pytest.mark.parametrize("how", ["complete", "stream"])
async def test_a_refusal_moves_on_without_asking_again(llm_server, how):
    llm_server.script("anthropic", anthropic_refusal("cyber"))
    call = _complete if how == "complete" else _stream
    with pytest.raises(ProviderError) as err:
        await call(max_retries=2)
    assert "declined to answer (stop_reason refusal, category cyber)" in str(err.value)
    assert err.value.retryable and not err.value.same_provider and len(llm_server.requests) == 1


# --------------------------------------------------------------------------- the chain


async def test_a_chain_from_anthropic_to_openai(llm_server):
    llm_server.script_error("anthropic", 529, times=2)
    llm_server.script("openai", {"step": FINAL["step"] | {"answer": "OpenAI's answer."}})
    chain = ModelChain([SPEC, "openai/gpt-4.1-mini"], max_retries=1)
    try:
        completion = await chain.stream(MESSAGES, AgentStep, on_partial=Shown())
    finally:
        await chain.aclose()
    assert completion.output.step.answer == "OpenAI's answer." and completion.usage.provider == "openai"
    assert [(a.provider, a.requests) for a in completion.attempts] == [("anthropic", 2), ("openai", 1)]


async def test_streamed_text_cut_by_max_tokens_then_the_next_model(llm_server):
    llm_server.script("anthropic", anthropic_max_tokens(FINAL, cut=90))
    llm_server.script("openai", {"step": FINAL["step"] | {"answer": "OpenAI's answer."}})
    interrupted: list[tuple[str, bool]] = []

    async def on_interrupt(error, more):
        interrupted.append((type(error).__name__, more))

    chain = ModelChain([SPEC, "openai/gpt-4.1-mini"], max_retries=2)
    try:
        completion = await chain.stream(MESSAGES, AgentStep, on_partial=Shown(), on_interrupt=on_interrupt)
    finally:
        await chain.aclose()
    assert completion.usage.provider == "openai" and interrupted == [("StreamFailed", True)]
    assert [r.provider for r in llm_server.requests] == ["anthropic", "openai"]


# --------------------------------------------------------------------------- whole turns

QUESTION = "What is the maximum income for a family of 4 to be eligible for child care?"
TURN_ANSWER = "A family of 4 qualifies up to the income limit in the chart [1]."


def _final(answer: str = TURN_ANSWER) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "references": [], "confidence": 0.8}}


@pytest.fixture
async def turn(kb_settings, tmp_path):
    """ask(agent_model, **settings) -> (result, the text the surface was shown)."""
    runtime = Runtime.open(kb_settings)
    services: list[Askdesk] = []

    async def ask(agent_model: str | None, **fields):
        fields.setdefault("router_model", "compatible/router")  # the pre-filter routes QUESTION: never called
        settings = Settings(data_dir=tmp_path / f"svc{len(services)}", agent_model=agent_model, llm_max_retries=1,
                            **fields)
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


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "not_streamed"])
async def test_turn_answered_by_anthropic(turn, llm_server, streamed):
    llm_server.script("anthropic", TOOLS, _final())
    result, shown = await turn(SPEC, stream_answers=streamed)
    assert not result.search_only and result.answer == TURN_ANSWER and result.references
    assert result.tool_calls[-1] == "get_formatted_context" and result.llm_calls == 2
    assert [bool(r.body.get("stream")) for r in llm_server.requests_for("anthropic")] == [streamed, streamed]
    if streamed:
        assert shown == result.answer
    second = json.dumps(llm_server.requests_for("anthropic")[1].body["messages"])
    assert "<tool_result" in second  # the search's passages went back to the model


@pytest.mark.parametrize("streamed", [True, False], ids=["streamed", "not_streamed"])
async def test_turn_cut_at_max_tokens_gives_the_search_results_with_sources(turn, llm_server, streamed):
    llm_server.script("anthropic", anthropic_max_tokens(_final(), cut=20))  # cut before any answer text
    result, _ = await turn(SPEC, stream_answers=streamed)
    assert result.search_only and result.references
    assert result.answer.startswith("The language model is not answering right now")
    assert len(llm_server.requests_for("anthropic")) == 1 and result.llm_calls == 1


async def test_turn_overloaded_anthropic_falls_back_to_openai(turn, llm_server):
    llm_server.script_error("anthropic", 529, times=2)
    llm_server.script("openai", _final())
    result, shown = await turn(SPEC, fallback_models=["openai/gpt-4.1-mini"])
    assert not result.search_only and result.answer == TURN_ANSWER and shown == TURN_ANSWER
    assert result.llm_calls == 2 and len(llm_server.requests_for("anthropic")) == 2


# --------------------------------------------------------------------------- providers as plug-ins


class _EntryPoint:
    """An entry point of the `askdesk.plugins` group, as an installed package declares one."""

    def __init__(self, name: str, module: str):
        self.name, self.value, self.dist, self._module = name, module, None, module

    def load(self):
        import importlib

        return importlib.import_module(self._module)


BUILT_IN = [_EntryPoint(name, f"agent.providers.{name}")
            for name in ("anthropic", "compatible", "gemini", "groq", "openai")]


def test_every_provider_is_a_registered_plugin_with_its_variables():
    providers = registered()
    assert {"openai", "groq", "gemini", "compatible", "ollama", "anthropic"} <= set(providers)
    anthropic = providers["anthropic"]
    assert (anthropic.key_env, anthropic.base_url_env) == ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")
    assert anthropic.default_models == {"agent": "claude-sonnet-4-6", "router": "claude-haiku-4-5"}
    with pytest.raises(ProviderNotConfigured, match="unknown provider 'mistral': use one of anthropic, compatible"):
        parse_spec("mistral/large")


def test_the_provider_table_in_the_docs_is_generated_from_the_classes():
    table = provider_table(load_plugins(BUILT_IN).providers.values())
    assert "| Anthropic | `anthropic/<model>` | `ANTHROPIC_API_KEY` | `ANTHROPIC_BASE_URL` |" in table
    page = (REPO / "docs" / "agent.md").read_text(encoding="utf-8")
    assert table in page, "docs/agent.md's provider table is stale: python -m agent.providers.factory"


def test_defaults_follow_each_providers_rank(monkeypatch):
    assert default_spec("agent") is None
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    assert (default_spec("agent"), default_spec("router")) == ("anthropic/claude-sonnet-4-6",
                                                               "anthropic/claude-haiku-4-5")
    monkeypatch.setenv("GROQ_API_KEY", "k")
    assert (default_spec("agent"), default_spec("router")) == ("groq/llama-3.3-70b-versatile",
                                                               "groq/llama-3.1-8b-instant")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert (default_spec("agent"), default_spec("router")) == ("openai/gpt-4.1-mini", "groq/llama-3.1-8b-instant")


def test_discovering_the_providers_imports_no_sdk():
    """`askdesk ask` with no model configured discovers the plug-ins (for the defaults) and must
    stay fast: no provider SDK, instructor or tenacity is imported by discovery."""
    code = ("import json, sys\nfrom agent.plugins import plugins\nloaded = plugins()\n"
            f"print(json.dumps([sorted(loaded.providers), [m for m in {SDKS!r} if m in sys.modules]]))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    providers, sdks = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "anthropic" in providers and sdks == []


def test_askdesk_plugins_lists_the_providers_with_their_missing_keys():
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")} | {"OPENAI_API_KEY": "sk-test"}
    code = "import sys\nfrom bot.cli import main\nsys.argv = ['askdesk', 'plugins', '--json']\nmain()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120, cwd=REPO)
    assert proc.returncode == 0, proc.stderr
    rows = {r["name"]: r for r in json.loads(proc.stdout)["loaded"] if r["kind"] == "provider"}
    assert rows["anthropic"]["missing"] == ["ANTHROPIC_API_KEY"] and rows["openai"]["missing"] == []
    assert rows["anthropic"]["settings"] == ["ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"]
    assert rows["gemini"]["settings"] == ["GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"]


async def test_a_plugin_provider_answers_through_askdesk_agent_model(turn, llm_server, monkeypatch):
    """A provider from a plug-in's entry point (tests/canned_provider.py), with no line in agent/:
    named by ASKDESK_AGENT_MODEL it answers the turn; unset, it is the default by its own rank."""
    registrar = load_plugins([_EntryPoint("canned", "tests.canned_provider"), *BUILT_IN])
    assert "canned" in registrar.providers and not registrar.failed
    (row,) = [x for x in registrar.loaded if x.name == "canned"]
    assert (row.kind, row.plugin, row.missing) == ("provider", "canned", ("CANNED_API_KEY",))
    with pytest.raises(ProviderNotConfigured, match="unknown provider 'canned'"):
        parse_spec("canned/canned-1")  # the installed plug-ins do not have it

    monkeypatch.setenv("CANNED_API_KEY", "k")
    monkeypatch.setenv("ASKDESK_AGENT_MODEL", "canned/canned-1")
    canned_provider.CannedProvider.calls.clear()
    with providers_from(registrar):
        result, shown = await turn(Settings().agent_model)  # read from the environment
        assert not result.search_only and result.answer == canned_provider.ANSWER and shown == result.answer
        assert canned_provider.CannedProvider.calls == ["canned-1"]
        assert default_spec("agent") == "canned/canned-1"  # OPENAI_API_KEY is set too (the fake server's)
        with pytest.raises(ProviderNotConfigured, match="use one of anthropic, canned, compatible"):
            parse_spec("mistral/large")
    assert "canned" not in registered()
    assert not llm_server.requests  # no built-in provider was asked
