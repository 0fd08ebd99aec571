"""OpenAI-compatible servers (vLLM, llama.cpp, Ollama) by base URL, and model specs."""

from __future__ import annotations

import pytest

from agent.config import Settings
from agent.messages import ChatMessage
from agent.providers.base import ProviderNotConfigured
from agent.providers.compatible import CompatibleProvider, ollama_base_url
from agent.providers.factory import configured_status, parse_spec, resolve
from tests.fakes.llm_models import FINAL, FinalAnswer, Step

MESSAGES = [ChatMessage(role="user", content="hi"), ChatMessage(role="tool", name="t", content="r")]


async def test_compatible_server_in_json_mode(llm_server):
    llm_server.script("compatible", FINAL)
    provider, model = resolve("compatible/meta-llama/Llama-3.1-8B-Instruct")
    completion = await provider.complete(MESSAGES, Step, model=model)

    assert isinstance(completion.output.step, FinalAnswer)
    assert completion.usage.provider == "compatible"
    request = llm_server.requests[0]
    assert request.path == "/compatible/v1/chat/completions"
    assert request.body["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert request.body["response_format"] == {"type": "json_object"}
    assert "tools" not in request.body
    last = request.body["messages"][-1]  # instructor's JSON mode merges consecutive user turns
    assert last["role"] == "user" and last["content"].endswith('<tool_result name="t">\nr\n</tool_result>')


async def test_compatible_tools_mode_and_api_key(llm_server):
    llm_server.script("compatible", FINAL)
    settings = Settings(compatible_base_url=f"{llm_server.url}/compatible/v1", compatible_api_key="sk-local",
                        compatible_mode="tools")
    provider, model = resolve("compatible/qwen2.5", settings)
    await provider.complete(MESSAGES, Step, model=model)
    request = llm_server.requests[0]
    assert request.body["tool_choice"]["function"]["name"] == "Step"
    assert request.headers["authorization"] == "Bearer sk-local"


async def test_ollama_via_ollama_host(llm_server):
    llm_server.script("ollama", FINAL)
    provider, model = resolve("ollama/llama3.1:8b")
    completion = await provider.complete(MESSAGES, Step, model=model)
    assert completion.usage.provider == "ollama"
    assert llm_server.requests[0].path == "/ollama/v1/chat/completions"


def test_ollama_default_and_host_forms(monkeypatch):
    assert ollama_base_url() == "http://localhost:11434/v1"
    monkeypatch.setenv("OLLAMA_HOST", "0.0.0.0:11500")
    assert ollama_base_url() == "http://0.0.0.0:11500/v1"


def test_compatible_without_base_url_names_the_setting():
    with pytest.raises(ProviderNotConfigured, match="ASKDESK_COMPATIBLE_BASE_URL"):
        CompatibleProvider()
    with pytest.raises(ProviderNotConfigured, match="not one of"):
        CompatibleProvider(base_url="http://127.0.0.1:1/v1", mode="xml")


def test_specs_keep_slashes_in_model_names_and_reject_bad_ones():
    assert parse_spec("compatible/meta-llama/Llama-3.1-8B") == ("compatible", "meta-llama/Llama-3.1-8B")
    assert parse_spec("OpenAI/gpt-4.1-mini") == ("openai", "gpt-4.1-mini")
    for bad, message in [("gpt-4", "not provider/model"), ("openai/", "not provider/model"),
                         ("mistral/large", "unknown provider 'mistral': use one of anthropic, compatible, ")]:
        with pytest.raises(ProviderNotConfigured, match=message) as err:
            parse_spec(bad)
    listed = str(err.value).split("use one of ", 1)[1].split(" (in model spec", 1)[0].split(", ")
    assert {"anthropic", "compatible", "gemini", "groq", "ollama", "openai"} <= set(listed)  # the loaded ones


def test_configured_status_names_missing_env_vars(monkeypatch):
    assert configured_status([None])[0].startswith("No LLM is configured")
    problems = configured_status(["openai/gpt-4.1-mini", "groq/llama-3.1-8b-instant", "gemini/gemini-2.5-flash"])
    assert [p.split(":")[0] for p in problems] == ["openai/gpt-4.1-mini", "groq/llama-3.1-8b-instant",
                                                   "gemini/gemini-2.5-flash"]
    assert "set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)" in problems[0]
    assert "set GROQ_API_KEY" in problems[1] and "set GEMINI_API_KEY" in problems[2]
    monkeypatch.setenv("GROQ_API_KEY", "k")
    assert len(configured_status(["groq/llama-3.1-8b-instant"])) == 0
