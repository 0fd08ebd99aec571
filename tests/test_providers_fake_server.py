"""The fake LLM server itself: tests that rely on it must fail loudly when it is misused."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from tests.fakes import FakeLLMServer


def test_unscripted_request_gets_clear_500_and_fails_assert_complete():
    with FakeLLMServer() as srv:
        response = httpx.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": []})
        assert response.status_code == 500
        assert "no scripted reply left for 'openai'" in response.json()["error"]["message"]
        assert srv.requests[0].error is not None
        with pytest.raises(AssertionError, match="no scripted reply left"):
            srv.assert_complete()


def test_unused_steps_fail_assert_complete():
    with FakeLLMServer() as srv:
        srv.script("groq", {"a": 1})
        with pytest.raises(AssertionError, match="never requested.*groq"):
            srv.assert_complete()


def test_wraps_reply_as_tool_call_or_json_content_per_request():
    with FakeLLMServer() as srv:
        srv.script("openai", {"x": 1}, {"x": 2})
        tool_req = {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": "Out"}}],
                    "tool_choice": {"type": "function", "function": {"name": "Out"}}}
        call = httpx.post(f"{srv.url}/v1/chat/completions", json=tool_req).json()["choices"][0]["message"]
        assert call["tool_calls"][0]["function"] == {"name": "Out", "arguments": '{"x": 1}'}
        text = httpx.post(f"{srv.url}/v1/chat/completions",
                          json={"model": "m", "messages": [], "response_format": {"type": "json_object"}}).json()
        assert text["choices"][0]["message"]["content"] == '{"x": 2}'
        srv.assert_complete()


def test_gemini_function_call_and_routes_per_provider():
    with FakeLLMServer() as srv:
        srv.script("gemini", {"y": [1]})
        srv.script("compatible", {"z": True})
        body = {"contents": [], "tools": [{"functionDeclarations": [{"name": "Out"}]}]}
        reply = httpx.post(f"{srv.url}/v1beta/models/gemini-x:generateContent", json=body).json()
        assert reply["candidates"][0]["content"]["parts"][0]["functionCall"] == {"name": "Out", "args": {"y": [1]}}
        assert srv.requests[0].model == "gemini-x"
        httpx.post(f"{srv.url}/compatible/v1/chat/completions", json={"model": "m", "messages": []})
        assert [r.provider for r in srv.requests] == ["gemini", "compatible"]
        srv.assert_complete()


def test_errors_default_reply_and_latency():
    with FakeLLMServer(latency={"groq": 0.05}) as srv:
        srv.script_error("groq", 429, headers={"retry-after": "0"})
        srv.script_default("groq", {"ok": True})
        first = httpx.post(f"{srv.url}/openai/v1/chat/completions", json={"model": "m", "messages": []})
        assert first.status_code == 429 and first.headers["retry-after"] == "0"
        started = time.perf_counter()
        for _ in range(2):
            assert httpx.post(f"{srv.url}/openai/v1/chat/completions",
                              json={"model": "m", "messages": []}).status_code == 200
        assert time.perf_counter() - started >= 0.1
        srv.assert_complete()


async def test_usable_from_async_code():
    async with FakeLLMServer() as srv:
        srv.script("openai", {"a": 1})
        async with httpx.AsyncClient() as client:
            response = await client.post(f"{srv.url}/v1/chat/completions", json={"model": "m", "messages": []})
        assert response.status_code == 200
        srv.assert_complete()
    await asyncio.sleep(0)
