"""Fault injection at the model APIs (issue 12): the real openai / groq / google-genai / anthropic clients
against the fake server's named faults. Policy: a failure that a retry on the same provider
cannot fix within the time left moves to the next model at once; nothing waits past the
turn's deadline; error texts never quote the model's output."""

from __future__ import annotations

import time

import pytest

from agent.deadline import deadline
from agent.messages import ChatMessage
from tests.conftest import FAST_BACKOFF
from agent.providers.base import ProviderError
from agent.providers.chain import ModelChain
from tests.fakes.llm_models import FINAL, Step

MESSAGES = [ChatMessage(role="user", content="Who qualifies for child care aid?")]
PRIMARY = {"openai": "openai/gpt-4.1-mini", "groq": "groq/llama-3.3-70b-versatile", "gemini": "gemini/gemini-2.5-flash",
           "anthropic": "anthropic/claude-sonnet-4-6"}
NEXT = {"openai": "gemini", "groq": "openai", "gemini": "groq", "anthropic": "openai"}


def _chain(first: str, **kwargs) -> ModelChain:
    return ModelChain([PRIMARY[first], PRIMARY[NEXT[first]]], **kwargs)


@pytest.mark.parametrize("provider", ["openai", "groq", "gemini"])
async def test_empty_choices_move_to_the_next_model_at_once(llm_server, provider):
    """Before: OpenAI/Groq raised IndexError as a non-retryable failure (no fallback at all);
    Gemini re-asked the empty model three times."""
    llm_server.script_fault(provider, "empty_choices")
    llm_server.script(NEXT[provider], FINAL)
    completion = await _chain(provider, max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == NEXT[provider]
    assert len(llm_server.requests_for(provider)) == 1
    assert "empty response" in completion.attempts[0].error


@pytest.mark.parametrize("provider", ["openai", "gemini", "anthropic"])
async def test_long_retry_after_falls_back_without_waiting(llm_server, monkeypatch, provider):
    """Before: Retry-After: 3600 was waited for (capped at 20 s) twice — 40 s — then fell back."""
    for name in FAST_BACKOFF:  # the production waits
        monkeypatch.delenv(name)
    llm_server.script_fault(provider, "retry_after_long")
    llm_server.script(NEXT[provider], FINAL)
    completion = await _chain(provider, max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == NEXT[provider]
    assert len(llm_server.requests_for(provider)) == 1


async def test_retry_after_beyond_the_deadline_falls_back_at_once(llm_server, monkeypatch):
    for name in FAST_BACKOFF:
        monkeypatch.delenv(name)
    llm_server.script_error("openai", 429, headers={"retry-after": "8"})  # under the cap, over the budget
    llm_server.script("gemini", FINAL)
    with deadline(5.0):
        completion = await _chain("openai", max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == "gemini" and len(llm_server.requests_for("openai")) == 1


async def test_short_retry_after_is_still_retried_on_the_same_model(llm_server):
    llm_server.script_fault("openai", "429")
    llm_server.script("openai", FINAL)
    completion = await _chain("openai", max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == "openai" and completion.usage.requests == 2


async def test_a_hang_moves_on_at_once_and_the_deadline_bounds_every_model(llm_server):
    llm_server.check_complete = False  # the fake's hanging handlers are cancelled, not answered
    llm_server.script_fault("groq", "hang")
    llm_server.script("openai", FINAL)
    completion = await _chain("groq", timeout=1.0, max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == "openai" and len(llm_server.requests_for("groq")) == 1

    llm_server.script_fault("groq", "hang")
    llm_server.script_fault("openai", "hang")
    chain = _chain("groq", timeout=30.0, max_retries=2)
    started = time.monotonic()
    with deadline(1.5), pytest.raises(ProviderError):
        await chain.complete(MESSAGES, Step)
    assert time.monotonic() - started < 10  # 1.5 s budget; a loaded machine adds seconds, not 60
    assert len(llm_server.requests_for("openai")) == 1  # the first call only: no time left for it


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize("kind", ["non_json", "schema_invalid"])
async def test_unusable_output_is_reasked_then_falls_back_without_quoting_it(llm_server, kind, provider):
    echo = "MARKER-5150 the user's own words"
    bad = "not json: " + echo if kind == "non_json" else '{"unexpected": "%s"}' % echo
    for _ in range(3):
        llm_server.script_raw(provider, bad)
    llm_server.script(NEXT[provider], FINAL)
    completion = await _chain(provider, max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == NEXT[provider] and len(llm_server.requests_for(provider)) == 3
    error = completion.attempts[0].error
    assert "MARKER-5150" not in error and "structure" in error


async def test_500_is_retried_then_falls_back(llm_server):
    llm_server.script_fault("gemini", "500", times=3)
    llm_server.script("groq", FINAL)
    completion = await _chain("gemini", max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == "groq" and len(llm_server.requests_for("gemini")) == 3
