"""Groq through instructor (tool-call mode): the cheap, fast router model.

Env: GROQ_API_KEY (required), GROQ_BASE_URL (optional; the SDK appends /openai/v1/...).
Groq speaks the chat-completions format, so the call path is the OpenAI one.
"""

from __future__ import annotations

import os

import groq
import instructor

from agent.providers.base import ProviderNotConfigured
from agent.providers.openai import ChatCompletionsProvider
from agent.providers.retry import Backoff


class GroqProvider(ChatCompletionsProvider):
    name = "groq"
    key_env = "GROQ_API_KEY"
    stream_usage_option = False  # Groq puts usage in the last chunk's x_groq

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 mode: instructor.Mode = instructor.Mode.TOOLS, backoff: Backoff | None = None):
        api_key = api_key or os.environ.get("GROQ_API_KEY")
        if not api_key:
            raise ProviderNotConfigured("Groq is not configured: set GROQ_API_KEY", provider="groq")
        client = groq.AsyncGroq(api_key=api_key, base_url=base_url or os.environ.get("GROQ_BASE_URL") or None,
                                max_retries=0)
        super().__init__(instructor.from_groq(client, mode=mode), client, backoff=backoff)
