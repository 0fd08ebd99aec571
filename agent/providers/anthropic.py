"""Anthropic (Claude) through the Messages API and instructor's Anthropic tools mode.

Env: ANTHROPIC_API_KEY (required), ANTHROPIC_BASE_URL (optional: a gateway, a proxy, a test
server; the SDK appends /v1/messages). SDK retries are off: `retry.structured_call` retries.

Kept here and nowhere else:
- messages: system -> the request's `system`, tool results -> tagged user text, consecutive
  turns of one role merged and the first turn a user's (the API's rules), no empty text blocks;
- `max_tokens` is required by the API: `AnthropicProvider.max_tokens` per call;
- structured output is a forced tool call (`tool_choice: {type: tool}`, instructor Mode.TOOLS
  on an Anthropic client); streamed, the tool's arguments arrive as `input_json_delta` pieces
  that instructor parses into growing partial outputs;
- errors (docs/provider-replies.md): `overloaded_error` (HTTP 529), `api_error` (500) and
  `rate_limit_error` (429, with `retry-after`) are retried with backoff, also when they come as
  an `event: error` inside a streamed reply that began with HTTP 200 (the SDK raises them with
  status 200, which the generic rules would not retry); `invalid_request_error` (400) and the
  other client errors are not;
- a reply that is not a whole answer: `stop_reason: "max_tokens"` or
  `"model_context_window_exceeded"` (cut off) and `"refusal"` (declined, with `stop_details`):
  named by `anthropic_stop_problem`, never re-asked (the same model stops the same way), and a
  streamed answer that ends that way is an error even when its partial JSON would validate.
"""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.messages import ChatMessage
from agent.providers.base import (Completion, ModelStopped, PartialFn, ProviderNotConfigured, ProviderPlugin,
                                  tool_result_text)
from agent.providers.retry import Backoff, structured_call
from agent.providers.streaming import streamed_call, tap

if TYPE_CHECKING:  # the SDK is imported when the provider is built, never by discovering it
    from tenacity import AsyncRetrying

T = TypeVar("T", bound=BaseModel)

# `error.type` of the API's error body -> retry on the same model or not (others: generic rules)
TRANSIENT_ERRORS = frozenset({"overloaded_error", "api_error", "rate_limit_error", "timeout_error"})
FINAL_ERRORS = frozenset({"invalid_request_error", "authentication_error", "permission_error", "not_found_error",
                          "request_too_large", "billing_error"})

# stop reasons after which the reply is not a whole answer, and what to call them
_CUT = {"max_tokens": "cut the answer off at the output token limit (stop_reason max_tokens)",
        "model_context_window_exceeded": "cut the answer off at the context window "
                                         "(stop_reason model_context_window_exceeded)"}
EMPTY_TEXT = "…"  # the API rejects empty text blocks


def to_anthropic_messages(messages: list[ChatMessage]) -> tuple[str | None, list[dict[str, str]]]:
    """(system, messages) for the Messages API: roles alternate and the first turn is the user's."""
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content) or None
    turns: list[dict[str, str]] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        text = (tool_result_text(message) if message.role == "tool" else message.content) or EMPTY_TEXT
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"] += "\n\n" + text
        else:
            turns.append({"role": role, "content": text})
    if not turns:  # the instruction alone: it becomes the user's turn
        return None, [{"role": "user", "content": system or EMPTY_TEXT}]
    if turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": EMPTY_TEXT})
    return system, turns


def anthropic_stop_problem(response: Any) -> str | None:
    """Why a message (or a stream's `message_delta` event) is not a whole answer, or None."""
    kind = getattr(response, "type", None)
    if kind == "message":
        reason, details = getattr(response, "stop_reason", None), getattr(response, "stop_details", None)
    elif kind == "message_delta":
        delta = getattr(response, "delta", None)
        reason, details = getattr(delta, "stop_reason", None), getattr(delta, "stop_details", None)
    else:
        return None
    if reason in _CUT:
        return _CUT[reason]
    if reason == "refusal":
        category = getattr(details, "category", None)
        return "declined to answer (stop_reason refusal" + (f", category {category})" if category else ")")
    return None


def _input_tokens(usage: Any) -> int:
    """Input tokens of a call, cached ones included (the API counts them apart)."""
    return sum(int(getattr(usage, name, None) or 0)
               for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))


def anthropic_tokens(response: Any) -> tuple[int, int]:
    usage = getattr(response, "usage", None)
    if usage is None:
        return 0, 0
    return _input_tokens(usage), int(getattr(usage, "output_tokens", None) or 0)


class StreamTokens:
    """Usage of a streamed call: input tokens come in `message_start`, the cumulative output
    tokens in `message_delta` (whose usage may leave input out), so the start is remembered."""

    def __init__(self) -> None:
        self.input = 0

    def __call__(self, event: Any) -> tuple[int, int]:
        kind = getattr(event, "type", None)
        if kind == "message_start":
            self.input = _input_tokens(event.message.usage)
            return 0, 0  # output so far is a placeholder; the delta has the count
        if kind == "message_delta":
            given = _input_tokens(event.usage)
            return given or self.input, int(event.usage.output_tokens or 0)
        return 0, 0


def _reask_policy(max_retries: int, stopped: list[str]) -> AsyncRetrying:
    """instructor re-asks after output that does not fit; a reply cut off or refused is not
    asked again (the same model would end the same way)."""
    from instructor.core.exceptions import ResponseParsingError
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    reaskable = (ValidationError, json.JSONDecodeError, ResponseParsingError)
    return AsyncRetrying(stop=stop_after_attempt(max(max_retries, 0) + 1), reraise=True,
                         retry=retry_if_exception(lambda exc: isinstance(exc, reaskable) and not stopped))


class AnthropicProvider(ProviderPlugin):
    """api.anthropic.com (or ANTHROPIC_BASE_URL): structured output as a forced tool call."""

    name = "anthropic"
    label = "Anthropic"
    key_env = "ANTHROPIC_API_KEY"
    base_url_env = "ANTHROPIC_BASE_URL"
    default_models = {"agent": "claude-sonnet-4-6", "router": "claude-haiku-4-5"}
    default_rank = {"agent": 40, "router": 40}
    max_tokens = 4096  # the API requires a cap on the reply; an answer step stays far below it

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None, max_tokens: int | None = None,
                 backoff: Backoff | None = None):
        import anthropic
        import instructor

        api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not api_key:
            raise ProviderNotConfigured("Anthropic is not configured: set ANTHROPIC_API_KEY", provider="anthropic")
        self.backoff = backoff or Backoff.from_settings()
        self.max_tokens = max_tokens or self.max_tokens
        self._sdk = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url or os.environ.get("ANTHROPIC_BASE_URL") or None, max_retries=0)
        self._client = instructor.from_anthropic(self._sdk, mode=instructor.Mode.TOOLS)
        sdk = self._sdk

        async def create_stream(*args: Any, **kwargs: Any) -> Any:
            return tap(await sdk.messages.create(*args, **kwargs))  # usage and stop reason metered

        mode, provider = self._client.mode, self._client.provider
        self._stream_client = instructor.AsyncInstructor(
            client=sdk, create=instructor.patch(create=create_stream, mode=mode, provider=provider),
            mode=mode, provider=provider)

    async def aclose(self) -> None:
        """Close the SDK's HTTP connections (else they are torn down after the loop closed)."""
        await self._sdk.close()

    @staticmethod
    def retryable(exc: BaseException) -> bool | None:
        import anthropic

        if not isinstance(exc, anthropic.APIStatusError) or not isinstance(exc.type, str):
            return None
        if exc.type in TRANSIENT_ERRORS:
            return True
        return False if exc.type in FINAL_ERRORS else None

    async def complete(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]:
        system, turns = to_anthropic_messages(messages)

        async def call(hooks):
            stopped: list[str] = []
            hooks.on("completion:response", lambda response: stopped.extend(filter(None, [
                anthropic_stop_problem(response)])))
            try:
                return await self._client.create_with_completion(
                    messages=turns, **({"system": system} if system else {}), response_model=response_model,
                    model=model, max_tokens=self.max_tokens, max_retries=_reask_policy(max_retries, stopped),
                    timeout=timeout, hooks=hooks)
            except Exception as exc:
                if stopped:  # cut off or refused: instructor's parse error says less
                    raise ModelStopped(self.name, stopped[-1]) from exc
                raise

        return await structured_call(provider=self.name, model=model, max_retries=max_retries, timeout=timeout,
                                     call=call, tokens_of=anthropic_tokens, key_env=self.key_env,
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
        """`complete`, streamed: the tool call's `input_json_delta` pieces parsed into
        `Partial[response_model]` objects for `on_partial` as they arrive."""
        system, turns = to_anthropic_messages(messages)

        def open_stream():
            return self._stream_client.create_partial(
                messages=turns, **({"system": system} if system else {}), response_model=response_model,
                model=model, max_tokens=self.max_tokens, max_retries=0, timeout=timeout)

        return await streamed_call(provider=self.name, model=model, max_retries=max_retries, timeout=timeout,
                                   open_stream=open_stream, response_model=response_model, on_partial=on_partial,
                                   tokens_of=StreamTokens(), stop_of=anthropic_stop_problem, key_env=self.key_env,
                                   backoff=self.backoff, retryable=self.retryable)


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(AnthropicProvider)
