"""Any OpenAI-compatible server by base URL: vLLM, llama.cpp server, LM Studio, Ollama.

Specs:
- `compatible/<model>`: base URL from ASKDESK_COMPATIBLE_BASE_URL (setting
  `compatible_base_url`), optional key ASKDESK_COMPATIBLE_API_KEY; the model name may
  contain '/' (`compatible/meta-llama/Llama-3.1-8B-Instruct`).
- `ollama/<model>`: Ollama's own OLLAMA_HOST (`host:port` or a URL) + `/v1`, default
  http://localhost:11434/v1; no key needed.

Local models follow JSON-mode output more reliably than function calling, so the default
instructor mode is JSON (`response_format={"type": "json_object"}` with the schema in the
prompt); `compatible_mode=tools` switches to function calling for servers that do it well.
"""

from __future__ import annotations

import os

from agent.config import Settings, load_settings
from agent.providers.base import Provider, ProviderNotConfigured
from agent.providers.openai import ChatCompletionsProvider
from agent.providers.retry import Backoff

MODES = ("json", "tools", "md_json")  # ASKDESK_COMPATIBLE_MODE -> instructor.Mode.JSON, TOOLS, MD_JSON
OLLAMA_DEFAULT = "http://localhost:11434"


def ollama_base_url() -> str:
    host = os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT
    if "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


class CompatibleProvider(ChatCompletionsProvider):
    name = "compatible"
    label = "OpenAI-compatible server (vLLM, llama.cpp, LM Studio…)"
    key_env = "ASKDESK_COMPATIBLE_API_KEY"
    base_url_env = "ASKDESK_COMPATIBLE_BASE_URL"
    key_required = False  # most local servers want none

    def __init__(self, *, base_url: str | None = None, api_key: str | None = None, mode: str | None = None,
                 settings: Settings | None = None, backoff: Backoff | None = None):
        import instructor
        import openai

        settings = settings or load_settings()
        base_url = base_url or self._base_url(settings)
        if not base_url:
            raise ProviderNotConfigured(
                "The OpenAI-compatible provider is not configured: set ASKDESK_COMPATIBLE_BASE_URL "
                "(e.g. http://localhost:8000/v1 for vLLM, http://localhost:8080/v1 for llama.cpp)",
                provider=self.name)
        mode_name = (mode or settings.compatible_mode).lower()
        if mode_name not in MODES:
            raise ProviderNotConfigured(
                f"ASKDESK_COMPATIBLE_MODE={mode_name!r} is not one of {', '.join(MODES)}", provider=self.name)
        client = openai.AsyncOpenAI(api_key=api_key or settings.compatible_api_key or "not-needed",
                                    base_url=base_url, max_retries=0)
        self.base_url = base_url
        super().__init__(instructor.from_openai(client, mode=instructor.Mode[mode_name.upper()]), client,
                         backoff=backoff or Backoff.from_settings(settings))

    @classmethod
    def _base_url(cls, settings: Settings) -> str | None:
        return settings.compatible_base_url

    @classmethod
    def missing_env(cls) -> list[str]:
        return [] if cls._base_url(load_settings()) else [cls.base_url_env]

    @classmethod
    def build(cls, settings: Settings | None, backoff: Backoff) -> Provider:
        return cls(settings=settings, backoff=backoff)


class OllamaProvider(CompatibleProvider):
    """A local Ollama server: its OpenAI-compatible endpoint, no key."""

    name = "ollama"
    label = "Ollama"
    key_env = ""
    base_url_env = "OLLAMA_HOST"

    @classmethod
    def _base_url(cls, settings: Settings) -> str | None:
        return ollama_base_url()


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(CompatibleProvider)
    r.provider(OllamaProvider)
