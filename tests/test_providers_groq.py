"""Groq provider: the real groq SDK + instructor against the fake server."""

from __future__ import annotations

import pytest

from agent.messages import ChatMessage
from agent.providers.base import ProviderError, ProviderNotConfigured
from agent.providers.groq import GroqProvider
from tests.fakes.llm_models import FINAL, TOOLS, CallTools, FinalAnswer, Step

MESSAGES = [
    ChatMessage(role="system", content="Route the message."),
    ChatMessage(role="user", content="What about a family of 6?"),
    ChatMessage(role="tool", name="search_facilities", content="3 results"),
]


async def test_structured_union_step_usage_and_wire_path(llm_server):
    llm_server.script("groq", TOOLS, input_tokens=40, output_tokens=9)
    completion = await GroqProvider().complete(MESSAGES, Step, model="llama-3.1-8b-instant")

    assert isinstance(completion.output.step, CallTools)
    assert completion.output.thought == "need context"
    assert (completion.usage.provider, completion.usage.input_tokens, completion.usage.output_tokens) == ("groq", 40, 9)
    request = llm_server.requests[0]
    assert request.path == "/openai/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-groq-key"
    assert request.body["model"] == "llama-3.1-8b-instant"
    assert request.body["messages"][2] == {
        "role": "user", "content": '<tool_result name="search_facilities">\n3 results\n</tool_result>'}


async def test_invalid_json_then_valid_is_reasked(llm_server):
    llm_server.script_raw("groq", "{broken")
    llm_server.script("groq", FINAL)
    completion = await GroqProvider().complete(MESSAGES, Step, model="m")
    assert isinstance(completion.output.step, FinalAnswer)
    assert len(llm_server.requests) == 2 and completion.usage.requests == 2


async def test_503_then_success_is_retried(llm_server):
    llm_server.script_error("groq", 503)
    llm_server.script("groq", FINAL)
    completion = await GroqProvider().complete(MESSAGES, Step, model="m", max_retries=1)
    assert completion.usage.requests == 2


async def test_400_is_not_retried(llm_server):
    llm_server.script_error("groq", 400, message="model `nope` does not exist")
    with pytest.raises(ProviderError) as err:
        await GroqProvider().complete(MESSAGES, Step, model="nope", max_retries=2)
    assert not err.value.retryable and "does not exist" in str(err.value)
    assert len(llm_server.requests) == 1


def test_missing_key_names_the_env_var():
    with pytest.raises(ProviderNotConfigured, match="set GROQ_API_KEY"):
        GroqProvider()
