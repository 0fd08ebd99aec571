"""The narrow provider protocol: one structured completion per call.

Every provider module (openai, groq, gemini, compatible) implements `Provider` through
`instructor`; the agent loop and the router only ever see this protocol.
"""

from __future__ import annotations

from typing import Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel

from agent.messages import ChatMessage

T = TypeVar("T", bound=BaseModel)


class Usage(BaseModel):
    """What one model call cost: recorded per call for the turn's trace and `--json`."""

    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    # added by the providers issue: HTTP requests behind this call (transport retries and
    # instructor re-asks included), and the error text when the call failed (chain log).
    requests: int = 1
    error: str | None = None


class Completion(BaseModel, Generic[T]):
    output: T
    usage: Usage


class ProviderError(RuntimeError):
    """A model call failed after retries (timeout, 429, 5xx, unusable output).
    `retryable` tells the fallback chain whether another provider should try."""

    def __init__(self, message: str, *, provider: str = "", retryable: bool = True):
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable


class ProviderNotConfigured(ProviderError):
    """No key/base URL for a provider: the message names the env var that enables it."""

    def __init__(self, message: str, *, provider: str = ""):
        super().__init__(message, provider=provider, retryable=False)


def tool_result_text(message: ChatMessage) -> str:
    """How a `tool` message reaches a model: our tool calls are fields of the structured
    step, not native tool calls, so results go back as tagged user text."""
    return f'<tool_result name="{message.name or "tool"}">\n{message.content}\n</tool_result>'


@runtime_checkable
class Provider(Protocol):
    name: str

    async def complete(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]: ...
