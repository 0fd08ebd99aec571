"""Groq through instructor (tool-call mode): the cheap, fast router model.

Env: GROQ_API_KEY (required), GROQ_BASE_URL (optional; the SDK appends /openai/v1/...).
Groq speaks the chat-completions format, so the call path is the OpenAI one; its
`tool_use_failed` rejections are handled there (agent/providers/openai.py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from agent.providers.base import ProviderNotConfigured
from agent.providers.openai import ChatCompletionsProvider
from agent.providers.retry import Backoff

if TYPE_CHECKING:
    import instructor


class GroqProvider(ChatCompletionsProvider):
    name = "groq"
    label = "Groq"
    key_env = "GROQ_API_KEY"
    base_url_env = "GROQ_BASE_URL"
    default_models = {"agent": "llama-3.3-70b-versatile", "router": "llama-3.1-8b-instant"}
    default_rank = {"agent": 30, "router": 10}
    stream_usage_option = False  # Groq puts usage in the last chunk's x_groq

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 mode: instructor.Mode | None = None, backoff: Backoff | None = None):
        import groq
        import instructor

        api_key = api_key or os.environ.get("GROQ_API_KEY")
        if not api_key:
            raise ProviderNotConfigured("Groq is not configured: set GROQ_API_KEY", provider="groq")
        client = groq.AsyncGroq(api_key=api_key, base_url=base_url or os.environ.get("GROQ_BASE_URL") or None,
                                max_retries=0)
        super().__init__(instructor.from_groq(client, mode=mode or instructor.Mode.TOOLS), client, backoff=backoff)


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(GroqProvider)
