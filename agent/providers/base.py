"""The two model protocols: `Model` (what the router and the loop call) and `Provider`, and
`ProviderPlugin`, what a provider declares to be found as a plug-in.

`Model.complete(messages, response_model) -> Completion` is the one interface the agent
uses; `ModelChain` (fallbacks) and `FunctionModel` (tests, benchmarks) implement it. Every
provider module (agent/providers/*.py, or a plug-in's) implements `Provider` through
`instructor`, which takes the concrete model name; a chain turns providers into a `Model`.
Each provider class is also a `ProviderPlugin`, registered by its module's `register(r)`
(agent/plugins.py), so a new provider is one module and one entry point.
A completion carries the usage of every attempt behind it (failed fallbacks included), and
a `ProviderError` carries the attempts that failed, so a turn counts its calls from what
it got back.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from pydantic import BaseModel, Field, model_validator

from agent.fencing import wrap_tool_result
from agent.messages import ChatMessage

if TYPE_CHECKING:
    from agent.config import Settings

T = TypeVar("T", bound=BaseModel)

# Awaited with each partial output of a streamed call; returns True once something was shown.
PartialFn = Callable[[Any], Awaitable[bool]]


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
    """A structured answer. `usage` is the call that answered; `attempts` every call behind
    this completion in order, failed fallbacks first and `usage` last (a plain provider: one)."""

    output: T
    usage: Usage
    attempts: list[Usage] = Field(default_factory=list)

    @model_validator(mode="after")
    def _at_least_the_answering_call(self) -> "Completion[T]":
        if not self.attempts:
            self.attempts = [self.usage]
        return self


class ProviderError(RuntimeError):
    """A model call failed after retries (timeout, 429, 5xx, unusable output).
    `retryable` tells the fallback chain whether another provider should try."""

    def __init__(self, message: str, *, provider: str = "", retryable: bool = True,
                 attempts: list[Usage] | None = None, shown: bool = False, same_provider: bool = True):
        super().__init__(message)
        self.provider = provider
        self.retryable = retryable
        self.attempts: list[Usage] = list(attempts or [])  # the failed calls, for the turn's count
        self.shown = shown  # part of a streamed output reached the user before the failure
        self.same_provider = same_provider  # False: retrying this provider will not help


class ModelStopped(ProviderError):
    """The model refused, was cut off at its output limit or was stopped by a safety filter
    (docs/provider-replies.md): asking the same model again would end the same way, so the
    chain moves on at once. `reason` names what happened, never the model's words."""

    def __init__(self, provider: str, reason: str, *, attempts: list[Usage] | None = None):
        super().__init__(f"{provider} {reason}", provider=provider, retryable=True, attempts=attempts,
                         same_provider=False)


class ProviderConfigError(ProviderError):
    """The provider refused our credentials (HTTP 401/403): a configuration problem for an
    administrator, not a temporary outage. `key_env` names the variable to fix."""

    def __init__(self, message: str, *, provider: str = "", key_env: str = "", attempts: list[Usage] | None = None):
        super().__init__(message, provider=provider, retryable=False, attempts=attempts)  # the chain still moves on
        self.key_env = key_env


class ProviderNotConfigured(ProviderError):
    """No key/base URL for a provider: the message names the env var that enables it."""

    def __init__(self, message: str, *, provider: str = ""):
        super().__init__(message, provider=provider, retryable=False)


def tool_result_text(message: ChatMessage) -> str:
    """How a `tool` message reaches a model: our tool calls are fields of the structured
    step, not native tool calls, so results go back as tagged user text."""
    return wrap_tool_result(message.name or "tool", message.content)


class Model:
    """What the router and the agent loop call: one structured completion, fallbacks hidden.

    `complete` is the one method a model must have; `stream` has a default (complete, then
    hand the whole output over as the only partial), so every model can be streamed from and
    nothing probes for it. `ModelChain` streams token by token; test models use the default."""

    async def complete(self, messages: list[ChatMessage], response_model: type[T]) -> Completion[T]:
        raise NotImplementedError

    async def stream(self, messages: list[ChatMessage], response_model: type[T], *, on_partial: PartialFn,
                     on_interrupt: Callable[[ProviderError, bool], Awaitable[None]] | None = None) -> Completion[T]:
        completion = await self.complete(messages, response_model)
        await on_partial(completion.output)
        return completion


@runtime_checkable
class Provider(Protocol):
    """One provider SDK behind instructor; every provider module implements both calls."""

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

    async def stream(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        on_partial: PartialFn,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]: ...


class ProviderPlugin:
    """A model provider as a plug-in declares it: `r.provider(cls)` in its module's `register(r)`.

    Everything the rest of askdesk needs to know about a provider is here, so nothing outside its
    module names it: the spec prefix (`name`), the variables that enable and point it
    (`key_env`, `base_url_env`), the models it answers with when no model is configured
    (`default_models`, ordered among providers by `default_rank`), how to build it (`build`) and
    which of its SDK's errors are worth retrying (`retryable`). Reading these imports no SDK:
    a provider module imports its SDK inside the functions that use it, so discovering the
    plug-ins loads no SDK into a one-shot `askdesk ask`.
    """

    name: ClassVar[str] = ""  # `<name>/<model>` in ASKDESK_AGENT_MODEL and friends
    label: ClassVar[str] = ""  # how people call it ("OpenAI"), for docs and messages
    key_env: ClassVar[str] = ""  # the API key's variable, named when the key is missing or rejected
    key_env_alternatives: ClassVar[tuple[str, ...]] = ()  # other variables that hold the same key
    base_url_env: ClassVar[str] = ""  # where a proxy, gateway or test server is named
    key_required: ClassVar[bool] = True  # False: runs without a key (local servers)
    # role ("agent", "router") -> model, used when that role has no model configured
    default_models: ClassVar[dict[str, str]] = {}
    # role -> place among the providers whose key is set (lower first; ties by name)
    default_rank: ClassVar[dict[str, int]] = {}

    @classmethod
    def env_variables(cls) -> list[str]:
        """Every variable the provider reads (`askdesk plugins`)."""
        return [v for v in (cls.key_env, *cls.key_env_alternatives, cls.base_url_env) if v]

    @classmethod
    def missing_env(cls) -> list[str]:
        """The variables that must be set before it can answer, and are not."""
        if not cls.key_required or not cls.key_env:
            return []
        return [] if any(os.environ.get(v) for v in (cls.key_env, *cls.key_env_alternatives)) else [cls.key_env]

    @classmethod
    def enabled_by(cls) -> str:
        """The variable a notice tells an administrator to set to use this provider."""
        return (cls.missing_env() or [cls.key_env or cls.base_url_env or "the provider's API key"])[0]

    @classmethod
    def build(cls, settings: Settings | None, backoff: Any) -> Provider:
        """An instance reading its key and base URL; raises ProviderNotConfigured without them.
        `backoff` is the settings' `agent.providers.retry.Backoff` (typed loosely here: retry.py
        builds on this module)."""
        return cls(backoff=backoff)  # type: ignore[call-arg]

    @staticmethod
    def retryable(exc: BaseException) -> bool | None:
        """This provider's verdict on an error of its SDK: True = retry on the same model (with
        backoff), False = do not, None = the generic rules decide (agent/providers/retry.py:
        timeouts, connection errors, 408/409/425/429 and 5xx are retried)."""
        return None
