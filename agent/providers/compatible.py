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

import instructor
import openai

from agent.config import Settings, load_settings
from agent.providers.base import ProviderNotConfigured
from agent.providers.openai import ChatCompletionsProvider
from agent.providers.retry import Backoff

MODES = {"json": instructor.Mode.JSON, "tools": instructor.Mode.TOOLS, "md_json": instructor.Mode.MD_JSON}
OLLAMA_DEFAULT = "http://localhost:11434"


def ollama_base_url() -> str:
    host = os.environ.get("OLLAMA_HOST") or OLLAMA_DEFAULT
    if "://" not in host:
        host = f"http://{host}"
    return host.rstrip("/") + "/v1"


class CompatibleProvider(ChatCompletionsProvider):
    key_env = "ASKDESK_COMPATIBLE_API_KEY"

    def __init__(self, name: str = "compatible", *, base_url: str | None = None, api_key: str | None = None,
                 mode: str | None = None, settings: Settings | None = None, backoff: Backoff | None = None):
        settings = settings or load_settings()
        self.name = name
        if name == "ollama":
            base_url = base_url or ollama_base_url()
        else:
            base_url = base_url or settings.compatible_base_url
        if not base_url:
            raise ProviderNotConfigured(
                "The OpenAI-compatible provider is not configured: set ASKDESK_COMPATIBLE_BASE_URL "
                "(e.g. http://localhost:8000/v1 for vLLM, http://localhost:8080/v1 for llama.cpp)",
                provider=name)
        mode_name = (mode or settings.compatible_mode).lower()
        if mode_name not in MODES:
            raise ProviderNotConfigured(
                f"ASKDESK_COMPATIBLE_MODE={mode_name!r} is not one of {', '.join(MODES)}", provider=name)
        client = openai.AsyncOpenAI(api_key=api_key or settings.compatible_api_key or "not-needed",
                                    base_url=base_url, max_retries=0)
        self.base_url = base_url
        super().__init__(instructor.from_openai(client, mode=MODES[mode_name]), client,
                         backoff=backoff or Backoff.from_settings(settings))
