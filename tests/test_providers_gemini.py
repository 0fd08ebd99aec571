"""Gemini provider: the real google-genai SDK + instructor against the fake server,
including Gemini's schema subset and message conversion."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import ProviderError, ProviderNotConfigured
from agent.providers.gemini import GeminiProvider, gemini_schema
from tests.fakes.llm_models import FINAL, TOOLS, CallTools, FinalAnswer, Step

MESSAGES = [
    ChatMessage(role="system", content="You answer from documents."),
    ChatMessage(role="user", content="Who qualifies?"),
    ChatMessage(role="assistant", content="Let me check."),
    ChatMessage(role="tool", name="get_formatted_context", content="[1] income limits"),
    ChatMessage(role="tool", name="search_facilities", content="none"),
]


def _walk(node):
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


async def test_structured_union_step_usage_and_request_shape(llm_server):
    llm_server.script("gemini", FINAL, input_tokens=300, output_tokens=42)
    completion = await GeminiProvider().complete(MESSAGES, Step, model="gemini-2.5-flash")

    assert type(completion.output) is Step  # the caller's class, not the schema-patched subclass
    assert isinstance(completion.output.step, FinalAnswer)
    assert completion.output.step.references[0].section == "Income"
    assert completion.output.step.confidence == 0.8
    usage = completion.usage
    assert (usage.provider, usage.model, usage.input_tokens, usage.output_tokens) == (
        "gemini", "gemini-2.5-flash", 300, 42)

    request = llm_server.requests[0]
    assert request.path == "/v1beta/models/gemini-2.5-flash:generateContent"
    assert request.headers["x-goog-api-key"] == "test-gemini-key"
    body = request.body
    assert body["systemInstruction"]["parts"][0]["text"] == "You answer from documents."
    # assistant -> model; the two tool results merge into one user turn
    assert [c["role"] for c in body["contents"]] == ["user", "model", "user"]
    tool_texts = [p["text"] for p in body["contents"][2]["parts"]]
    assert tool_texts == ['<tool_result name="get_formatted_context">\n[1] income limits\n</tool_result>',
                          '<tool_result name="search_facilities">\nnone\n</tool_result>']
    assert body["toolConfig"]["functionCallingConfig"] == {"mode": "ANY", "allowedFunctionNames": ["Step"]}


async def test_schema_sent_is_in_geminis_subset(llm_server):
    llm_server.script("gemini", TOOLS)
    completion = await GeminiProvider().complete(MESSAGES, Step, model="m")
    assert isinstance(completion.output.step, CallTools)

    params = llm_server.requests[0].body["tools"][0]["functionDeclarations"][0]["parameters"]
    keys = {key for node in _walk(params) for key in node}
    assert not keys & {"oneOf", "const", "discriminator", "$ref", "$defs", "additionalProperties", "title"}
    step = params["properties"]["step"]
    branches = step.get("anyOf") or step["any_of"]  # the SDK sends proto field names; the API takes both
    assert sorted(b["properties"]["kind"]["enum"][0] for b in branches) == ["final_answer", "tool_calls"]
    assert params["properties"]["thought"]["nullable"] is True


def test_schema_rewrite_keeps_fields_named_like_keywords():
    schema = {"properties": {"title": {"type": "string", "title": "Title"}, "default": {"const": "x"}},
              "required": ["title", "ghost"], "oneOf": [{"type": "string"}],
              "discriminator": {"propertyName": "kind"}}
    assert gemini_schema(schema) == {
        "properties": {"title": {"type": "string"}, "default": {"enum": ["x"], "type": "string"}},
        "required": ["title"], "anyOf": [{"type": "string"}]}


async def test_text_instead_of_function_call_then_valid_is_retried(llm_server):
    llm_server.script_raw("gemini", "Sure! Here is the answer.")
    llm_server.script("gemini", FINAL)
    completion = await GeminiProvider().complete(MESSAGES, Step, model="m", max_retries=1)
    assert completion.output.step.kind == "final_answer"
    assert len(llm_server.requests) == 2 and completion.usage.requests == 2


async def test_invalid_args_are_reasked_with_the_validation_error(llm_server):
    llm_server.script_raw("gemini", json.dumps({"step": {"kind": "final_answer"}}))  # answer missing
    llm_server.script("gemini", FINAL)
    completion = await GeminiProvider().complete(MESSAGES, Step, model="m", max_retries=1)
    assert completion.output.step.answer.startswith("Families")
    assert "Validation Error" in llm_server.requests[1].text


async def test_429_then_success_and_401_not_retried(llm_server):
    llm_server.script_error("gemini", 429, headers={"retry-after": "0"})
    llm_server.script("gemini", FINAL)
    completion = await GeminiProvider().complete(MESSAGES, Step, model="m")
    assert completion.usage.requests == 2

    llm_server.script_error("gemini", 401, message="API key not valid")
    with pytest.raises(ProviderError) as err:
        await GeminiProvider().complete(MESSAGES, Step, model="m", max_retries=3)
    assert not err.value.retryable and "GEMINI_API_KEY" in str(err.value)
    assert len(llm_server.requests) == 3


async def test_timeout_is_a_retryable_error(llm_server):
    llm_server.script_delay("gemini", 2.0)
    with pytest.raises(ProviderError) as err:
        await GeminiProvider().complete(MESSAGES, Step, model="m", timeout=0.3, max_retries=0)
    assert err.value.retryable and "within 0.3s" in str(err.value)


def test_missing_key_names_the_env_vars(monkeypatch):
    with pytest.raises(ProviderNotConfigured, match="set GEMINI_API_KEY \\(or GOOGLE_API_KEY\\)"):
        GeminiProvider()
    monkeypatch.setenv("GOOGLE_API_KEY", "k")
    assert GeminiProvider().name == "gemini"


class Args(BaseModel):
    name: str
    arguments: dict[str, object]


class FreeForm(BaseModel):
    calls: list[Args]


async def test_free_form_objects_travel_as_json_strings(llm_server):
    # the real API rejects an OBJECT without properties; the fake does too, so this passing
    # proves the declaration is a string and the output is decoded back to a dict
    llm_server.script("gemini", {"calls": [{"name": "search", "arguments": '{"query": "ccs", "limit": 3}'}]})
    completion = await GeminiProvider().complete(MESSAGES, FreeForm, model="m")
    assert completion.output.calls[0].arguments == {"query": "ccs", "limit": 3}
    params = llm_server.requests[0].body["tools"][0]["functionDeclarations"][0]["parameters"]
    arguments = params["properties"]["calls"]["items"]["properties"]["arguments"]
    assert arguments["type"] == "STRING" and "JSON object" in arguments["description"]


def test_fake_rejects_free_form_object_like_the_real_api():
    import httpx

    from tests.fakes import FakeLLMServer

    with FakeLLMServer() as srv:
        body = {"contents": [], "tools": [{"functionDeclarations": [
            {"name": "F", "parameters": {"type": "OBJECT", "properties": {"a": {"type": "OBJECT"}}}}]}]}
        reply = httpx.post(f"{srv.url}/v1beta/models/m:generateContent", json=body)
        assert reply.status_code == 400
        assert "properties[a].properties: should be non-empty for OBJECT type" in reply.json()["error"]["message"]
        with pytest.raises(AssertionError, match="Gemini would reject"):
            srv.assert_complete()
