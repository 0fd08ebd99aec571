"""OpenAI through instructor (tool-call mode), and the chat-completions plumbing that
Groq and OpenAI-compatible servers share.

Env: OPENAI_API_KEY (required), OPENAI_BASE_URL (optional: Azure-style gateways, proxies,
or any OpenAI-compatible server). SDK retries are off: `retry.structured_call` retries.

Some OpenAI-compatible servers and proxies ignore `stream: true` and answer with one plain JSON
completion, which an SDK stream reads as no events at all. A provider that sees this asks
again without streaming, and from then on never asks it to stream (one extra request, once).
"""

from __future__ import annotations

import logging
import os
from typing import Any, TypeVar

import instructor
import openai
from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import Completion, ProviderError, ProviderNotConfigured, tool_result_text
from agent.providers.retry import Backoff, structured_call
from agent.providers.base import PartialFn
from agent.providers.streaming import streamed_call, tap

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("askdesk.providers")


class StreamIgnored(ProviderError):
    """The server answered a streamed request with a plain JSON body."""

    def __init__(self, provider: str) -> None:
        super().__init__(f"{provider} answered a streamed request without streaming", provider=provider,
                         retryable=False, same_provider=False)


def is_event_stream(stream: Any) -> bool:
    """False when the HTTP response behind an SDK stream is not server-sent events."""
    response = getattr(stream, "response", None)
    content_type = str(getattr(response, "headers", {}).get("content-type", "")) if response is not None else ""
    return not content_type.startswith("application/json")


def to_openai_messages(messages: list[ChatMessage]) -> list[dict[str, str]]:
    """Chat-completions messages; `tool` results become tagged user text (our tool calls
    live in the structured step, so there is no native tool_call id to answer)."""
    out: list[dict[str, str]] = []
    for message in messages:
        if message.role == "tool":
            out.append({"role": "user", "content": tool_result_text(message)})
        else:
            out.append({"role": message.role, "content": message.content})
    return out


def openai_tokens(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


def openai_stream_tokens(chunk: Any) -> tuple[int, int]:
    """Usage of a streamed call: OpenAI's usage chunk, or Groq's `x_groq.usage` on the last one."""
    usage = getattr(chunk, "usage", None) or getattr(getattr(chunk, "x_groq", None), "usage", None)
    if usage is None:
        return 0, 0
    return int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)


class ChatCompletionsProvider:
    """A provider over an OpenAI-style `chat.completions.create` patched by instructor."""

    name: str = "openai"
    key_env: str = "OPENAI_API_KEY"
    # `stream_options.include_usage` makes the stream end with a usage chunk (Groq reports
    # usage in `x_groq` instead and does not need it).
    stream_usage_option: bool = True

    def __init__(self, client: instructor.AsyncInstructor, sdk_client: Any = None, *,
                 backoff: Backoff | None = None):
        self.backoff = backoff or Backoff.from_settings()
        self._client = client
        self._sdk_client = sdk_client
        self._stream_client: instructor.AsyncInstructor | None = None
        self.streams = True  # False once the server was seen to ignore `stream: true`
        self._stream_ignored = False
        if sdk_client is not None:
            # the same instructor mode and provider, over a create that taps the stream's usage
            async def create(*args: Any, **kwargs: Any) -> Any:
                if self._stream_ignored:
                    raise StreamIgnored(self.name)  # no second streamed request in the same call
                stream = await sdk_client.chat.completions.create(*args, **kwargs)
                if kwargs.get("stream") and not is_event_stream(stream):
                    self._stream_ignored = True
                    await stream.close()
                    raise StreamIgnored(self.name)
                return tap(stream)

            self._stream_client = instructor.AsyncInstructor(
                client=sdk_client, create=instructor.patch(create=create, mode=client.mode, provider=client.provider),
                mode=client.mode, provider=client.provider)

    async def aclose(self) -> None:
        """Close the SDK's HTTP connections (else they are torn down after the loop closed)."""
        if self._sdk_client is not None:
            await self._sdk_client.close()

    async def complete(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]:
        async def call(hooks):
            return await self._client.create_with_completion(
                messages=to_openai_messages(messages),
                response_model=response_model,
                model=model,
                max_retries=max_retries,
                timeout=timeout,
                hooks=hooks,
            )

        return await structured_call(provider=self.name, model=model, max_retries=max_retries,
                                     timeout=timeout, call=call, tokens_of=openai_tokens, key_env=self.key_env, backoff=self.backoff)

    async def stream(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        on_partial: PartialFn,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]:
        """`complete`, streamed: tool-call argument (or JSON content) deltas parsed into
        `Partial[response_model]` objects for `on_partial` as they arrive; `complete` for a
        server that does not stream."""
        if not self.streams:
            return await self.complete(messages, response_model, model=model, max_retries=max_retries,
                                       timeout=timeout)
        client = self._stream_client or self._client
        extra = {"stream_options": {"include_usage": True}} if self.stream_usage_option else {}

        def open_stream():
            return client.create_partial(
                messages=to_openai_messages(messages), response_model=response_model, model=model,
                max_retries=0, timeout=timeout, **extra)

        try:
            return await streamed_call(provider=self.name, model=model, max_retries=max_retries, timeout=timeout,
                                       open_stream=open_stream, response_model=response_model, on_partial=on_partial,
                                       tokens_of=openai_stream_tokens, key_env=self.key_env,
                                       backoff=self.backoff)
        except ProviderError:
            if not self._stream_ignored:
                raise
        self.streams = False
        log.warning("%s/%s answered a streamed request with plain JSON: asking it without streaming from now on",
                    self.name, model)
        completion = await self.complete(messages, response_model, model=model, max_retries=max_retries,
                                         timeout=timeout)
        usage = completion.usage.model_copy(update={"requests": completion.usage.requests + 1})
        return completion.model_copy(update={"usage": usage})


class OpenAIProvider(ChatCompletionsProvider):
    """api.openai.com (or OPENAI_BASE_URL) with instructor Mode.TOOLS."""

    name = "openai"
    key_env = "OPENAI_API_KEY"

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 mode: instructor.Mode = instructor.Mode.TOOLS, backoff: Backoff | None = None):
        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise ProviderNotConfigured(
                "OpenAI is not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)",
                provider="openai")
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
                                    max_retries=0)
        super().__init__(instructor.from_openai(client, mode=mode), client, backoff=backoff)
