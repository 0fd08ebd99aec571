"""A model with fallbacks: the primary spec answers, the next one takes over on failure.

`ModelChain.for_agent(settings)` = [agent_model, *fallback_models];
`ModelChain.for_router(settings)` = [router_model, agent_model, *fallback_models] — the
cheap router model first, and routing keeps working when its provider is down.
Unset model settings default to a model of the first provider whose key is present (each
provider's `default_models` and `default_rank`: factory.default_spec), so setting
OPENAI_API_KEY alone is enough.

Fallback rule: any ProviderError, once the provider's own retries are done or cannot help
within the turn's deadline (agent/deadline.py), moves on to the next spec at once; a
not-configured spec is skipped. A rejected key (401/403) is logged at ERROR as a configuration
error naming its variable, and when no model answers the chain raises ProviderConfigError, so
the user hears "configuration problem", not "temporary outage". Each call gets at most the
time left before the deadline; with none left the chain stops (`DeadlineExceeded`). Log lines
name the spec and the kind of failure, never the provider's message (it can quote the input);
each retry on the same model is one WARNING line from retry.py, and instructor's own records of
the failures handled here are DEBUG (`handled_by_askdesk`), so nothing handled logs at ERROR.

Accounting: every provider attempt, failed or not, is a `Usage` (with `error` set on
failures and `requests` = HTTP requests behind it). The returned Completion lists them all
in `attempts` (its `usage` names the provider that answered); when no provider answers,
the raised ProviderError's `attempts` lists them. A turn's `llm_calls` is their count.

Streaming (`stream`): the same order, rules and accounting, with partial outputs passed to
`on_partial` as they arrive. When a model fails after its partial output reached the user
(the provider marks the error `shown`), `on_interrupt(error, more)` is awaited first — the
caller keeps what was shown and adds a note — and the next model answers after it
(`more` says whether one is left).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from pydantic import BaseModel

from agent.config import Settings
from agent.messages import ChatMessage
from agent.deadline import bounded, remaining
from agent.providers.base import (
    Completion,
    Model,
    PartialFn,
    Provider,
    ProviderConfigError,
    ProviderError,
    ProviderNotConfigured,
    Usage,
)
from agent.providers.factory import default_spec, no_model_hint, parse_spec, resolve
from agent.providers.handled import handled_by_askdesk

T = TypeVar("T", bound=BaseModel)
log = logging.getLogger("askdesk.providers")


class DeadlineExceeded(ProviderError):
    """The turn's deadline passed before any model answered."""

# Awaited when a model fails after its partial output was shown: (error, another model follows).
InterruptFn = Callable[[ProviderError, bool], Awaitable[None]]


class ModelChain(Model):
    def __init__(self, specs: Sequence[str | None], *, timeout: float = 30.0, max_retries: int = 2,
                 settings: Settings | None = None):
        self.specs = list(dict.fromkeys(s for s in specs if s))  # ordered, no duplicates
        self.timeout = timeout
        self.max_retries = max_retries
        self.missing: list[str] = []  # why a spec cannot run, one line each
        self._targets: list[tuple[str, Provider, str]] = []  # (spec, provider, model)
        providers: dict[str, Provider] = {}
        for spec in self.specs:
            try:
                name, model = parse_spec(spec)
                if name not in providers:
                    providers[name] = resolve(spec, settings)[0]
                self._targets.append((spec, providers[name], model))
            except ProviderNotConfigured as exc:
                self.missing.append(f"{spec}: {exc}")
        if not self.specs:
            self.missing.append(f"No LLM is configured: set {no_model_hint()}")

    async def aclose(self) -> None:
        """Close every provider's HTTP client once (providers are shared between specs)."""
        for provider in {id(p): p for _, p, _ in self._targets}.values():
            close = getattr(provider, "aclose", None)
            if close is not None:
                await close()

    @classmethod
    def for_agent(cls, settings: Settings) -> ModelChain:
        primary = settings.agent_model or default_spec("agent")
        return cls([primary, *settings.fallback_models], timeout=settings.llm_timeout,
                   max_retries=settings.llm_max_retries, settings=settings)

    @classmethod
    def for_router(cls, settings: Settings) -> ModelChain:
        router = settings.router_model or default_spec("router")
        agent = settings.agent_model or default_spec("agent")
        return cls([router, agent, *settings.fallback_models], timeout=settings.llm_timeout,
                   max_retries=settings.llm_max_retries, settings=settings)

    @property
    def configured(self) -> bool:
        """At least one spec can run."""
        return bool(self._targets)

    @property
    def active_specs(self) -> list[str]:
        return [spec for spec, _, _ in self._targets]

    async def complete(self, messages: list[ChatMessage], response_model: type[T], *,
                       timeout: float | None = None, max_retries: int | None = None) -> Completion[T]:
        """The first answer along the chain; raises the last ProviderError when none answers."""
        async def call(provider: Provider, model: str, timeout: float, max_retries: int) -> Completion[T]:
            return await provider.complete(messages, response_model, model=model, max_retries=max_retries,
                                           timeout=timeout)

        return await self._first(call, timeout=timeout, max_retries=max_retries)

    async def stream(self, messages: list[ChatMessage], response_model: type[T], *, on_partial: PartialFn,
                     on_interrupt: InterruptFn | None = None, timeout: float | None = None,
                     max_retries: int | None = None) -> Completion[T]:
        """`complete`, streamed token by token by every provider."""
        async def call(provider: Provider, model: str, timeout: float, max_retries: int) -> Completion[T]:
            return await provider.stream(messages, response_model, model=model, max_retries=max_retries,
                                         timeout=timeout, on_partial=on_partial)

        return await self._first(call, timeout=timeout, max_retries=max_retries, on_interrupt=on_interrupt)

    async def _first(self, call: Callable[[Provider, str, float, int], Awaitable[Completion[T]]], *,
                     timeout: float | None, max_retries: int | None,
                     on_interrupt: InterruptFn | None = None) -> Completion[T]:
        if not self._targets:
            raise ProviderNotConfigured("; ".join(self.missing))
        errors: list[str] = []
        attempts: list[Usage] = []
        last: ProviderError | None = None
        config: ProviderConfigError | None = None
        shown = False  # a failed model's partial output reached the user
        for position, (spec, provider, model) in enumerate(self._targets):
            left = remaining()
            if left is not None and left <= 0:
                errors.append(f"{spec}: not tried, the turn's deadline had passed")
                last = last or DeadlineExceeded("no time left for a model call", provider=provider.name)
                last.attempts = list(attempts)
                break
            try:
                with handled_by_askdesk():  # failures are retried, re-asked or logged here, not by instructor
                    completion = await call(provider, model, bounded(self.timeout if timeout is None else timeout),
                                            self.max_retries if max_retries is None else max_retries)
            except ProviderError as exc:
                attempts += exc.attempts or [Usage(provider=provider.name, model=model, error=str(exc))]
                exc.attempts = list(attempts)
                _log_failure(spec, exc)
                if isinstance(exc, ProviderConfigError):
                    config = config or exc
                if exc.shown:
                    shown = True
                    if on_interrupt is not None:
                        await on_interrupt(exc, position + 1 < len(self._targets))
                errors.append(f"{spec}: {exc}")
                last = exc
                continue
            return completion.model_copy(update={"attempts": [*attempts, completion.usage]})
        assert last is not None
        if len(errors) == 1:
            raise last
        summary = "every model failed — " + "; ".join(errors)
        if config is not None:  # the actionable, lasting cause wins over transient ones
            error: ProviderError = ProviderConfigError(summary, provider=config.provider, key_env=config.key_env,
                                                       attempts=attempts)
        else:
            error = ProviderError(summary, provider=last.provider, retryable=True, attempts=attempts)
        error.shown = shown
        raise error from last


def _log_failure(spec: str, exc: ProviderError) -> None:
    if isinstance(exc, ProviderConfigError):
        log.error("configuration error: %s rejected the API key in %s; fix or replace it (trying the next model)",
                  spec, exc.key_env or "its key variable")
        return
    status = getattr(exc, "status", None)
    log.warning("model %s failed (%s%s); trying the next model", spec, type(exc).__name__,
                f", HTTP {status}" if status else "")
