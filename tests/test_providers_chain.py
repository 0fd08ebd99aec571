"""ModelChain: fallback order, skipping unconfigured providers, and every attempt's usage."""

from __future__ import annotations

import pytest

from agent.config import Settings
from agent.messages import ChatMessage
from agent.providers.base import ProviderConfigError, ProviderError, ProviderNotConfigured
from agent.providers.chain import ModelChain
from tests.fakes.llm_models import FINAL, FinalAnswer, Step

MESSAGES = [ChatMessage(role="user", content="Who qualifies for child care aid?")]


async def test_500s_on_primary_fall_back_to_next_provider(llm_server):
    llm_server.script_error("openai", 500, times=3)
    llm_server.script("groq", FINAL, input_tokens=50, output_tokens=12)
    chain = ModelChain(["openai/gpt-4.1-mini", "groq/llama-3.3-70b-versatile"], max_retries=2)

    completion = await chain.complete(MESSAGES, Step)

    assert isinstance(completion.output.step, FinalAnswer)
    assert (completion.usage.provider, completion.usage.model) == ("groq", "llama-3.3-70b-versatile")
    attempts = completion.attempts
    assert [(u.provider, u.requests, u.error is not None) for u in attempts] == [("openai", 3, True), ("groq", 1, False)]
    assert "HTTP 500" in attempts[0].error
    assert attempts[-1] == completion.usage
    assert [r.provider for r in llm_server.requests] == ["openai"] * 3 + ["groq"]


async def test_timeout_falls_back_to_gemini(llm_server):
    llm_server.script_delay("groq", 3.0)
    llm_server.script("gemini", FINAL)
    chain = ModelChain(["groq/llama-3.1-8b-instant", "gemini/gemini-2.5-flash"], timeout=1.0, max_retries=0)
    completion = await chain.complete(MESSAGES, Step)
    assert completion.usage.provider == "gemini"
    assert "within 1" in completion.attempts[0].error


async def test_401_falls_back_at_once_and_is_logged_as_a_configuration_error(llm_server, caplog):
    """Before: a 401 was raised at once (no fallback) and read as a temporary outage."""
    llm_server.script_error("openai", 401)
    llm_server.script("groq", FINAL)
    chain = ModelChain(["openai/gpt-4.1-mini", "groq/llama-3.3-70b-versatile"], max_retries=2)
    completion = await chain.complete(MESSAGES, Step)
    assert completion.usage.provider == "groq"
    assert [r.provider for r in llm_server.requests] == ["openai", "groq"]  # the 401 was not retried
    (record,) = [r for r in caplog.records if r.name == "askdesk.providers"]
    assert record.levelname == "ERROR"
    assert record.getMessage().startswith("configuration error: openai/gpt-4.1-mini rejected the API key in OPENAI_API_KEY")


async def test_all_failing_with_a_401_among_them_is_a_configuration_error(llm_server):
    llm_server.script_error("openai", 401)
    llm_server.script_error("groq", 503, times=3)
    chain = ModelChain(["openai/gpt-4.1-mini", "groq/llama-3.3-70b-versatile"], max_retries=2)
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY") as err:
        await chain.complete(MESSAGES, Step)
    assert err.value.key_env == "OPENAI_API_KEY"
    assert [u.provider for u in err.value.attempts] == ["openai", "groq"]


async def test_unconfigured_specs_are_skipped_and_reported(llm_server, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    llm_server.script("gemini", FINAL)
    chain = ModelChain(["openai/gpt-4.1-mini", "gemini/gemini-2.5-flash"])
    assert chain.active_specs == ["gemini/gemini-2.5-flash"]
    assert "set OPENAI_API_KEY" in chain.missing[0]
    assert (await chain.complete(MESSAGES, Step)).usage.provider == "gemini"


async def test_every_model_failing_raises_one_error_naming_each(llm_server):
    llm_server.script_error("openai", 503)
    llm_server.script_error("groq", 429, headers={"retry-after": "0"})
    chain = ModelChain(["openai/a", "groq/b"], max_retries=0)
    with pytest.raises(ProviderError, match="every model failed") as err:
        await chain.complete(MESSAGES, Step)
    assert err.value.retryable
    assert "openai/a: openai answered HTTP 503" in str(err.value) and "groq/b: groq answered HTTP 429" in str(err.value)
    assert [u.provider for u in err.value.attempts] == ["openai", "groq"]


async def test_no_provider_configured():
    chain = ModelChain.for_agent(Settings())
    assert not chain.configured
    assert "OPENAI_API_KEY" in chain.missing[0]
    with pytest.raises(ProviderNotConfigured):
        await chain.complete(MESSAGES, Step)


def test_specs_from_settings_and_defaults_from_present_keys(monkeypatch):
    settings = Settings(agent_model="openai/gpt-4.1", router_model="groq/llama-3.1-8b-instant",
                        fallback_models=["gemini/gemini-2.5-flash", "openai/gpt-4.1"], llm_timeout=7, llm_max_retries=1)
    agent = ModelChain.for_agent(settings)
    assert agent.specs == ["openai/gpt-4.1", "gemini/gemini-2.5-flash"]
    assert (agent.timeout, agent.max_retries) == (7, 1)
    assert ModelChain.for_router(settings).specs == [
        "groq/llama-3.1-8b-instant", "openai/gpt-4.1", "gemini/gemini-2.5-flash"]

    monkeypatch.setenv("GEMINI_API_KEY", "k")
    assert ModelChain.for_agent(Settings()).active_specs == ["gemini/gemini-2.5-flash"]
    assert ModelChain.for_router(Settings()).active_specs == ["gemini/gemini-2.5-flash-lite", "gemini/gemini-2.5-flash"]


async def test_aclose_closes_every_sdk_client(llm_server):
    """Closing the chain releases the SDKs' HTTP connections (no 'Event loop is closed' noise at exit)."""
    llm_server.script("openai", FINAL)
    llm_server.script("gemini", FINAL)
    chain = ModelChain(["openai/gpt-4.1-mini", "openai/gpt-4.1", "gemini/gemini-2.5-flash"])
    await chain.complete(MESSAGES, Step)
    gemini = chain._targets[-1][1]
    await gemini.complete(MESSAGES, Step, model="gemini-2.5-flash")
    openai_provider = chain._targets[0][1]
    assert chain._targets[1][1] is openai_provider  # one provider (and client) per name
    assert not openai_provider._sdk_client.is_closed()
    await chain.aclose()
    assert openai_provider._sdk_client.is_closed()
    assert gemini._sdk_clients == []
