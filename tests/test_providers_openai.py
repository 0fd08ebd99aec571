"""OpenAI provider: the real openai SDK + instructor against the fake server."""

from __future__ import annotations

import json

import pytest

from agent.messages import ChatMessage
from agent.providers.base import ProviderError, ProviderNotConfigured
from agent.providers.openai import OpenAIProvider
from tests.fakes.llm_models import FINAL, TOOLS, CallTools, FinalAnswer, Step

MESSAGES = [
    ChatMessage(role="system", content="You answer from documents."),
    ChatMessage(role="user", content="Who qualifies?"),
    ChatMessage(role="assistant", content="Let me look that up."),
    ChatMessage(role="tool", name="get_formatted_context", content="[1] eligibility.md: income limits..."),
]


async def test_structured_union_step_and_usage(llm_server):
    llm_server.script("openai", FINAL, input_tokens=120, output_tokens=30)
    completion = await OpenAIProvider().complete(MESSAGES, Step, model="gpt-4.1-mini")

    assert isinstance(completion.output.step, FinalAnswer)
    assert completion.output.step.references[1].source == "faq.md"
    assert completion.output.step.references[1].section is None
    usage = completion.usage
    assert (usage.provider, usage.model, usage.input_tokens, usage.output_tokens, usage.requests) == (
        "openai", "gpt-4.1-mini", 120, 30, 1)
    assert usage.latency_ms > 0
    request = llm_server.requests[0]
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-openai-key"
    assert request.body["tool_choice"]["function"]["name"] == "Step"


async def test_tool_role_becomes_tagged_user_text(llm_server):
    llm_server.script("openai", TOOLS)
    completion = await OpenAIProvider().complete(MESSAGES, Step, model="m")

    assert isinstance(completion.output.step, CallTools)
    assert completion.output.step.calls[0].query == "income"
    sent = llm_server.requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[3]["content"] == (
        '<tool_result name="get_formatted_context">\n[1] eligibility.md: income limits...\n</tool_result>')


async def test_invalid_json_is_reasked_by_instructor(llm_server):
    llm_server.script_raw("openai", "not json at all")
    llm_server.script("openai", FINAL, input_tokens=10, output_tokens=5)
    completion = await OpenAIProvider().complete(MESSAGES, Step, model="m", max_retries=1)

    assert completion.output.step.answer.startswith("Families")
    assert len(llm_server.requests) == 2
    assert completion.usage.requests == 2
    assert completion.usage.input_tokens > 10  # both requests counted
    reask = json.dumps(llm_server.requests[1].body["messages"][-1])
    assert "Validation Error" in reask


async def test_invalid_output_every_time_is_a_retryable_error(llm_server):
    llm_server.script_raw("openai", "nope")
    llm_server.script_raw("openai", '{"step": {"kind": "final_answer"}}')
    with pytest.raises(ProviderError) as err:
        await OpenAIProvider().complete(MESSAGES, Step, model="m", max_retries=1)
    assert err.value.retryable
    assert "does not fit the expected structure" in str(err.value)
    assert err.value.attempts[0].requests == 2


async def test_429_then_success_is_retried(llm_server):
    llm_server.script_error("openai", 429, headers={"retry-after": "0"})
    llm_server.script("openai", FINAL)
    completion = await OpenAIProvider().complete(MESSAGES, Step, model="m", max_retries=2)
    assert completion.usage.requests == 2
    assert [r.status for r in llm_server.requests] == [429, 200]


async def test_500_every_time_raises_retryable_after_retries(llm_server):
    llm_server.script_error("openai", 500, times=3)
    with pytest.raises(ProviderError) as err:
        await OpenAIProvider().complete(MESSAGES, Step, model="m", max_retries=2)
    assert err.value.retryable and "HTTP 500" in str(err.value)
    assert len(llm_server.requests) == 3


async def test_401_is_not_retried_and_names_the_key(llm_server):
    llm_server.script_error("openai", 401, message="Incorrect API key provided")
    with pytest.raises(ProviderError) as err:
        await OpenAIProvider().complete(MESSAGES, Step, model="m", max_retries=3)
    assert not err.value.retryable
    assert "HTTP 401" in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    # the server's text is left out: OpenAI's quotes part of the key
    assert "Incorrect API key provided" not in str(err.value)
    assert len(llm_server.requests) == 1


async def test_timeout_is_not_retried_on_the_same_provider(llm_server):
    """A model that hung once is likely to hang again: the chain moves on instead (issue 12)."""
    llm_server.script_delay("openai", 3.0, then=FINAL)
    with pytest.raises(ProviderError, match="within 1s") as err:
        await OpenAIProvider().complete(MESSAGES, Step, model="m", timeout=1.0, max_retries=2)
    assert err.value.retryable and err.value.attempts[0].requests == 1
    assert len(llm_server.requests) == 1


async def test_timeout_without_retries_is_a_retryable_error(llm_server):
    llm_server.script_delay("openai", 2.0)
    with pytest.raises(ProviderError) as err:
        await OpenAIProvider().complete(MESSAGES, Step, model="m", timeout=0.3, max_retries=0)
    assert err.value.retryable and "within 0.3s" in str(err.value)


def test_missing_key_names_the_env_var():
    with pytest.raises(ProviderNotConfigured, match="set OPENAI_API_KEY"):
        OpenAIProvider()
