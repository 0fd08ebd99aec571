"""OpenAI through instructor (tool-call mode), and the chat-completions plumbing that
Groq and OpenAI-compatible servers share.

Env: OPENAI_API_KEY (required), OPENAI_BASE_URL (optional: Azure-style gateways, proxies,
or any OpenAI-compatible server). SDK retries are off: `retry.structured_call` retries.

Real replies this module must survive (docs/provider-replies.md):
- a `refusal` instead of a tool call, `finish_reason: "length"` or `"content_filter"`: the
  reason is named (`stop_problem`), and the same model is not asked again — the chain moves on;
  a streamed answer that ends that way is an error even when its partial JSON would validate;
- OpenAI-compatible servers that send zero values for absent fields (`refusal: ""`,
  `finish_reason: ""`): an empty refusal is no refusal;
- Groq's HTTP 400 `tool_use_failed` (its own validation of the model's tool call failed; in a
  stream, an `event: error` after HTTP 200): the model is asked again, told what was wrong,
  within `max_retries`, like instructor's re-ask after invalid JSON;
- a server that answers `stream: true` with one plain JSON completion (older llama.cpp
  builds, some proxies; an SDK stream would read no events from it): that body is used
  whole, as the call's only chunk — for this call only, the next call asks to stream again.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import (Completion, ModelStopped, PartialFn, ProviderError, ProviderNotConfigured,
                                  ProviderPlugin, tool_result_text)
from agent.providers.retry import Backoff, structured_call
from agent.providers.streaming import streamed_call, tap

if TYPE_CHECKING:  # the SDKs are imported when a provider is built, never by discovering it
    import instructor
    from openai.types.chat import ChatCompletionChunk

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("askdesk.providers")

# finish reasons after which the output is not the whole answer, and what to call them
_STOPS = {"length": "cut the answer off at the output token limit (finish_reason length)",
          "content_filter": "stopped the answer with its content filter (finish_reason content_filter)"}
REFUSED = "declined to answer (a refusal instead of the structured reply)"


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


def stop_problem(response: Any) -> str | None:
    """Why a completion or chunk is not (the end of) a whole answer: a refusal, or a finish
    reason that cut it off. None for a normal reply, a usage chunk, or a server's empty
    `finish_reason: ""` / `refusal: ""` (zero values some compatible servers send)."""
    for choice in getattr(response, "choices", None) or []:
        part = getattr(choice, "message", None) or getattr(choice, "delta", None)
        if getattr(part, "refusal", None):
            return REFUSED
        reason = getattr(choice, "finish_reason", None)
        if reason in _STOPS:
            return _STOPS[reason]
    return None


def without_empty_refusal(response: Any) -> Any:
    """`refusal: ""` means no refusal (instructor reads any non-None refusal as one)."""
    for choice in getattr(response, "choices", None) or []:
        message = getattr(choice, "message", None)
        if message is not None and getattr(message, "refusal", None) == "":
            message.refusal = None
    return response


def tool_use_failed(exc: BaseException | None) -> str | None:
    """Groq's message when it rejected the model's tool call (`code: tool_use_failed`, HTTP 400,
    or an `event: error` in a stream), looked up through instructor's wrapping; else None."""
    seen = 0
    while exc is not None and seen < 5:
        body = getattr(exc, "body", None)
        inner = body.get("error", body) if isinstance(body, dict) else None
        if getattr(exc, "code", None) == "tool_use_failed" or (
                isinstance(inner, dict) and inner.get("code") == "tool_use_failed"):
            message = inner.get("message") if isinstance(inner, dict) else None
            return str(message or "the tool call did not match the function's schema")
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None


class ToolUseFailed(ProviderError):
    """The provider rejected the model's tool call: worth asking the same model again, told
    why. The message never quotes the failed generation (it can echo the user)."""

    def __init__(self, provider: str) -> None:
        super().__init__(f"{provider}'s model wrote a tool call the API rejected (tool_use_failed)",
                         provider=provider, retryable=True)


@dataclass
class _Call:
    """What one call learned on the way: Groq's rejection of the last tool call (told to the
    model when it is asked again) and whether the server ignored `stream: true`."""

    rejected: str | None = None
    plain_json: bool = False


_CALL: ContextVar[_Call | None] = ContextVar("askdesk_chat_call", default=None)


def retry_hint(tool: str, rejected: str) -> dict[str, str]:
    """What the model is told after Groq rejected its tool call (the API's reason, no output)."""
    return {"role": "user", "content": (f"Your previous reply was rejected by the API: {rejected}. "
                                        f"Reply only by calling the function {tool} with arguments that "
                                        "match its schema.")}


async def one_chunk(response: Any) -> AsyncIterator[ChatCompletionChunk]:
    """A plain JSON completion read as the only chunk of a stream (a server that ignored
    `stream: true`): the message becomes the delta, usage and finish reason ride along."""
    from openai.types.chat import ChatCompletionChunk

    try:
        await response.aread()
        body = json.loads(response.content or b"{}")
    finally:
        await response.aclose()
    choices = body.get("choices") if isinstance(body, dict) else None
    if not choices:
        return  # nothing in it: "ended the stream without output", like an empty response
    choice = choices[0]
    message = dict(choice.get("message") or {})
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content"),
                             "refusal": message.get("refusal") or None}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    yield ChatCompletionChunk.model_validate({
        "id": str(body.get("id") or "plain-json"), "object": "chat.completion.chunk",
        "created": int(body.get("created") or 0), "model": str(body.get("model") or ""),
        "choices": [{"index": 0, "delta": delta, "finish_reason": choice.get("finish_reason") or None}],
        "usage": body.get("usage")})


class ChatCompletionsProvider(ProviderPlugin):
    """A provider over an OpenAI-style `chat.completions.create` patched by instructor."""

    # `stream_options.include_usage` makes the stream end with a usage chunk (Groq reports
    # usage in `x_groq` instead and does not need it).
    stream_usage_option: bool = True

    def __init__(self, client: instructor.AsyncInstructor, sdk_client: Any = None, *,
                 backoff: Backoff | None = None):
        import instructor

        self.backoff = backoff or Backoff.from_settings()
        self._client = client
        self._sdk_client = sdk_client
        self._stream_client: instructor.AsyncInstructor | None = None
        self._told_plain_json = False  # the plain-JSON reply to a stream is logged once at WARNING
        if sdk_client is not None:
            # the same instructor mode and provider, over creates that fix up what real servers send
            async def create(*args: Any, **kwargs: Any) -> Any:
                return without_empty_refusal(await sdk_client.chat.completions.create(*args, **kwargs))

            async def create_stream(*args: Any, **kwargs: Any) -> Any:
                stream = await sdk_client.chat.completions.create(*args, **kwargs)
                if kwargs.get("stream") and not is_event_stream(stream):
                    state = _CALL.get()
                    if state is not None:
                        state.plain_json = True
                    return tap(one_chunk(stream.response))
                return tap(self._tool_use_checked(stream))

            mode, provider = client.mode, client.provider
            self._client = instructor.AsyncInstructor(
                client=sdk_client, create=instructor.patch(create=create, mode=mode, provider=provider),
                mode=mode, provider=provider)
            self._stream_client = instructor.AsyncInstructor(
                client=sdk_client, create=instructor.patch(create=create_stream, mode=mode, provider=provider),
                mode=mode, provider=provider)

    async def _tool_use_checked(self, stream: Any) -> AsyncIterator[Any]:
        """Groq reports a rejected tool call inside a 200 stream (`event: error`): raise it as
        ToolUseFailed, so the stream is asked again like a non-streamed 400."""
        try:
            async for chunk in stream:
                yield chunk
        except Exception as exc:
            rejected = tool_use_failed(exc)
            if rejected is None:
                raise
            state = _CALL.get()
            if state is not None:
                state.rejected = rejected
            raise ToolUseFailed(self.name) from exc

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
            problems: list[str] = []
            hooks.on("completion:response", lambda response: problems.extend(filter(None, [stop_problem(response)])))
            rejected: str | None = None  # Groq's reason for rejecting the last tool call
            asks = 0
            while True:
                asks += 1
                hint = [retry_hint(response_model.__name__, rejected)] if rejected else []
                try:
                    return await self._client.create_with_completion(
                        messages=to_openai_messages(messages) + hint,
                        response_model=response_model,
                        model=model,
                        max_retries=max_retries,
                        timeout=timeout,
                        hooks=hooks,
                    )
                except Exception as exc:
                    if problems:  # refused or cut off: instructor's parse error says less
                        raise ModelStopped(self.name, problems[-1]) from exc
                    rejected = tool_use_failed(exc)
                    if rejected is None:
                        raise
                    if asks > max(max_retries, 0):
                        raise ToolUseFailed(self.name) from exc
                    log.warning("%s/%s attempt %d of %d wrote a tool call the API rejected (tool_use_failed); "
                                "asking again", self.name, model, asks, max(max_retries, 0) + 1)

        return await structured_call(provider=self.name, model=model, max_retries=max_retries,
                                     timeout=timeout, call=call, tokens_of=openai_tokens, key_env=self.key_env,
                                     backoff=self.backoff, retryable=self.retryable)

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
        `Partial[response_model]` objects for `on_partial` as they arrive. A server that
        answers with plain JSON instead is read as one chunk (this call only)."""
        client = self._stream_client or self._client
        extra = {"stream_options": {"include_usage": True}} if self.stream_usage_option else {}
        state = _Call()
        token = _CALL.set(state)

        def open_stream():
            hint = [retry_hint(response_model.__name__, state.rejected)] if state.rejected else []
            return client.create_partial(
                messages=to_openai_messages(messages) + hint, response_model=response_model, model=model,
                max_retries=0, timeout=timeout, **extra)

        try:
            return await streamed_call(provider=self.name, model=model, max_retries=max_retries, timeout=timeout,
                                       open_stream=open_stream, response_model=response_model, on_partial=on_partial,
                                       tokens_of=openai_stream_tokens, stop_of=stop_problem, key_env=self.key_env,
                                       backoff=self.backoff, retryable=self.retryable)
        finally:
            _CALL.reset(token)
            if state.plain_json:
                level = logging.DEBUG if self._told_plain_json else logging.WARNING
                self._told_plain_json = True
                log.log(level, "%s/%s answered a streamed request with plain JSON: used it whole "
                        "(the next call asks it to stream again)", self.name, model)


class OpenAIProvider(ChatCompletionsProvider):
    """api.openai.com (or OPENAI_BASE_URL) with instructor Mode.TOOLS."""

    name = "openai"
    label = "OpenAI"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    default_models = {"agent": "gpt-4.1-mini", "router": "gpt-4.1-nano"}
    default_rank = {"agent": 10, "router": 20}

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 mode: instructor.Mode | None = None, backoff: Backoff | None = None):
        import instructor
        import openai

        api_key = api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            raise ProviderNotConfigured(
                "OpenAI is not configured: set OPENAI_API_KEY (and OPENAI_BASE_URL for a compatible server)",
                provider="openai")
        client = openai.AsyncOpenAI(api_key=api_key, base_url=base_url or os.environ.get("OPENAI_BASE_URL") or None,
                                    max_retries=0)
        super().__init__(instructor.from_openai(client, mode=mode or instructor.Mode.TOOLS), client, backoff=backoff)


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(OpenAIProvider)
