"""One structured call with transport retries, error mapping and usage metering.

Shared by every provider module so they all behave the same:
- instructor re-asks the model on invalid JSON / validation errors (its own `max_retries`);
- timeouts, connection errors, 408/409/429 and 5xx are retried here with exponential
  backoff (honouring `Retry-After`), because SDK retries differ per SDK and are disabled;
- every failure becomes a `ProviderError`; `ProviderError.attempts` carries what the failed call
  cost. 401/403 become `ProviderConfigError` naming the key variable.
- a retry on the same provider happens only when it can help within the turn's deadline
  (agent/deadline.py): never after a timeout (a hung model hangs again), an empty response or
  a rejected key, and never when Retry-After asks for longer than `retry_after_cap` or than
  the time left — the chain moves to the next model at once instead.
- `Usage` counts the HTTP requests behind a call and sums tokens over re-asks.
- error messages never quote the model's output (pydantic's `input_value`): it can echo the
  user's question, and these messages reach logs and traces.
- one WARNING line per retry, from askdesk (`askdesk.providers`: which model, attempt n of m,
  why, the wait), for a transport retry and for instructor's re-ask alike. instructor logs every
  failed attempt at ERROR ("API call failed on attempt n", "Max retries exceeded") although the
  failure is handled here or by the chain: inside askdesk's calls its records are demoted to
  DEBUG (agent/providers/handled.py), so a handled retry leaves no ERROR line and no traceback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.deadline import bounded, remaining
from agent.providers.base import Completion, ProviderConfigError, ProviderError, Usage
from agent.providers.handled import handled_by_askdesk

if TYPE_CHECKING:
    from instructor.core.hooks import Hooks

T = TypeVar("T", bound=BaseModel)

# A provider's own verdict on an exception (`ProviderPlugin.retryable`): True = worth retrying on
# the same model, False = not, None = the rules below decide.
Judge = Callable[[BaseException], "bool | None"]

log = logging.getLogger("askdesk.providers")

# instructor's records stay out of the terminal when the app configures no logging at all.
logging.getLogger("instructor").addHandler(logging.NullHandler())


@dataclass(frozen=True)
class Backoff:
    """How long to wait between transport retries (settings `llm_backoff_*`; tests shrink it)."""

    initial: float = 0.5  # first wait, doubled per retry
    maximum: float = 8.0  # cap of the exponential wait
    retry_after_cap: float = 20.0  # longest Retry-After we honour before giving up on waiting
    jitter: float = 0.25  # +- fraction of randomness

    @classmethod
    def from_settings(cls, settings: Any = None) -> "Backoff":
        if settings is None:
            from agent.config import load_settings

            settings = load_settings()
        return cls(initial=settings.llm_backoff_initial, maximum=settings.llm_backoff_max,
                   retry_after_cap=settings.llm_retry_after_cap)

    def wait(self, retry_state: Any) -> float:
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None and retry_after >= 0:
            return min(retry_after, self.retry_after_cap)
        base = min(self.initial * 2 ** (retry_state.attempt_number - 1), self.maximum)
        return max(0.0, base * (1 + random.uniform(-self.jitter, self.jitter)))

    def stopper(self, attempts: int) -> Callable[[Any], bool]:
        """Stop retrying on this provider when a retry cannot help in the time there is."""

        def stop(retry_state: Any) -> bool:
            if retry_state.attempt_number >= attempts:
                return True
            exc = retry_state.outcome.exception() if retry_state.outcome else None
            if not getattr(exc, "same_provider", True):
                return True
            retry_after = getattr(exc, "retry_after", None)
            if retry_after is not None and retry_after > self.retry_after_cap:
                return True  # e.g. Retry-After: 3600 — waiting any part of it is wasted time
            left = remaining()
            wait = retry_after if retry_after is not None else self.initial * 2 ** (retry_state.attempt_number - 1)
            return left is not None and wait >= left

        return stop

    def announce(self, provider: str, model: str, attempts: int) -> Callable[[Any], None]:
        """tenacity's `before_sleep`: the one WARNING line of a transport retry."""

        def before_sleep(retry_state: Any) -> None:
            exc = retry_state.outcome.exception() if retry_state.outcome else None
            wait = retry_state.next_action.sleep if retry_state.next_action else 0.0
            log.warning("%s/%s attempt %d of %d failed (%s); retrying in %.2g s", provider, model,
                        retry_state.attempt_number, attempts, why(exc), wait)

        return before_sleep


TRANSIENT_STATUS = {408, 409, 425, 429} | set(range(500, 600))


class TransientProviderError(ProviderError):
    """A failure worth retrying on the same provider (timeout, 429, 5xx, connection, or what the
    provider's own `retryable` says is). `kind` names an error reported without an HTTP status
    (an error event inside a streamed reply)."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None,
                 retry_after: float | None = None, same_provider: bool = True, kind: str | None = None):
        super().__init__(message, provider=provider, retryable=True, same_provider=same_provider)
        self.status = status
        self.retry_after = retry_after
        self.kind = kind


# --------------------------------------------------------------------------- error mapping


def _parse_errors() -> tuple[type[BaseException], ...]:
    from instructor.core.exceptions import ResponseParsingError

    return (ValidationError, json.JSONDecodeError, ResponseParsingError, AssertionError)


def _validation_summary(exc: BaseException) -> str:
    """What failed validation, without the offending values (they can quote the user)."""
    if isinstance(exc, ValidationError):
        errors = exc.errors(include_input=False, include_url=False)
        parts = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}" for e in errors[:3]]
        return f"{exc.error_count()} validation error(s) for {exc.title}: " + "; ".join(parts)
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON ({exc.msg} at position {exc.pos})"
    return type(exc).__name__


def why(exc: BaseException | None) -> str:
    """A failure in a log line: its kind and HTTP status, never the provider's message (it can
    quote the input)."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        retry_after = getattr(exc, "retry_after", None)
        return f"HTTP {status}" + (f", Retry-After {retry_after:g} s" if retry_after is not None else "")
    if isinstance(exc, TransientProviderError):  # no status: an error event, or the connection failed
        return exc.kind or "connection error"
    if isinstance(exc, ValidationError):
        return f"{exc.error_count()} validation error(s)"
    return type(exc).__name__ if exc is not None else "unknown"


def _status_of(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)  # openai / groq APIStatusError
    if isinstance(status, int):
        return status
    code = getattr(exc, "code", None)  # google.genai.errors.APIError
    if isinstance(code, int) and 100 <= code < 600:
        return code
    status = getattr(exc, "status", None)  # aiohttp.ClientResponseError
    return status if isinstance(status, int) and 100 <= status < 600 else None


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None) or getattr(exc, "headers", None)
    if not headers:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        if headers.get("retry-after") is not None:
            return float(headers["retry-after"])
    except (TypeError, ValueError):
        return None  # an HTTP date: fall back to exponential backoff
    return None


def _error_kind(exc: BaseException) -> str | None:
    """The error's type as the API's error body names it (`error.type`), when it has one."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    kind = inner.get("type") if isinstance(inner, dict) else None
    return str(kind) if kind else None


def _server_message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)  # openai / groq
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    message = getattr(exc, "message", None)  # google-genai
    if isinstance(message, str) and message:
        return message
    return str(exc) or type(exc).__name__


def _is_timeout(exc: BaseException) -> bool:
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return True
    name = type(exc).__name__
    return "Timeout" in name or any("Timeout" in c.__name__ for c in type(exc).__mro__)


def _is_connection(exc: BaseException) -> bool:
    import httpx

    if isinstance(exc, (httpx.TransportError, ConnectionError, OSError)):
        return True
    names = {c.__name__ for c in type(exc).__mro__}
    # TransportError: httpx forks some SDKs ship (httpx2) raise it mid-stream, unwrapped
    return bool(names & {"APIConnectionError", "ClientConnectionError", "ServerDisconnectedError",
                         "ClientPayloadError", "ClientOSError", "TransportError"})


def classify(exc: BaseException, *, provider: str, timeout: float, key_env: str = "",
             retryable: Judge | None = None) -> ProviderError:
    """Map any SDK / instructor exception to a ProviderError the chain can act on. `retryable` is
    the provider's own verdict (`ProviderPlugin.retryable`), asked before the generic rules."""
    if isinstance(exc, ProviderError):
        return exc
    from instructor.core.exceptions import InstructorRetryException

    if isinstance(exc, InstructorRetryException):
        cause = exc.__cause__
        if cause is None or isinstance(cause, _parse_errors()):
            attempts = getattr(exc, "n_attempts", None)
            return ProviderError(
                f"{provider} returned output that does not fit the expected structure"
                f"{f' after {attempts} attempts' if attempts else ''}: {_validation_summary(cause or exc)}",
                provider=provider, retryable=True)
        exc = cause
    if _is_timeout(exc):
        return TransientProviderError(f"{provider} did not answer within {timeout:g}s", provider=provider,
                                      same_provider=False)
    status = _status_of(exc)
    verdict = retryable(exc) if retryable is not None else None
    if verdict is not None and status not in (401, 403):
        message = _server_message(exc)
        failed = status is not None and status >= 400  # else an error event inside a 200 stream
        if verdict:
            where = f"answered HTTP {status}" if failed else f"reported {_error_kind(exc) or 'an error'}"
            return TransientProviderError(f"{provider} {where}: {message}", provider=provider,
                                          status=status if failed else None, retry_after=_retry_after(exc),
                                          kind=None if failed else _error_kind(exc))
        where = f" with HTTP {status}" if failed else ""
        return ProviderError(f"{provider} rejected the request{where}: {message}", provider=provider,
                             retryable=False)
    if status is not None:
        message = _server_message(exc)
        if status in TRANSIENT_STATUS:
            return TransientProviderError(f"{provider} answered HTTP {status}: {message}", provider=provider,
                                          status=status, retry_after=_retry_after(exc))
        if status in (401, 403):
            where = key_env or "its API key"
            return ProviderConfigError(f"{provider} rejected the API key in {where} (HTTP {status}): check {where}",
                                       provider=provider, key_env=key_env)
        return ProviderError(f"{provider} rejected the request with HTTP {status}: {message}",
                             provider=provider, retryable=False)
    if _is_connection(exc):
        return TransientProviderError(f"{provider} is unreachable: {type(exc).__name__}", provider=provider)
    if isinstance(exc, _parse_errors()):
        return ProviderError(f"{provider} returned unusable output: {_validation_summary(exc)}",
                             provider=provider, retryable=True)
    return ProviderError(f"{provider} call failed: {type(exc).__name__}", provider=provider, retryable=False)


# --------------------------------------------------------------------------- the call


def _is_empty(response: Any) -> bool:
    for name in ("choices", "candidates"):  # OpenAI-style / Gemini
        if hasattr(response, name):
            return not getattr(response, name)
    return False


@dataclass
class _Meter:
    tokens_of: Callable[[Any], tuple[int, int]]
    spec: str = ""  # provider/model, for the re-ask's log line
    asks: int = 1  # instructor's attempts per call: the first ask and its re-asks
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    empty: int = 0  # responses with no choices / candidates at all
    asked: int = 0  # requests of the current transport attempt: more than one are re-asks
    unfit: str = "unusable output"  # why the last output was rejected, when instructor says

    def hooks(self) -> Hooks:
        """Fresh hooks for one transport attempt (instructor's call and its re-asks)."""
        from instructor.core.hooks import Hooks

        self.asked = 0
        hooks = Hooks()
        hooks.on("completion:kwargs", self._on_request)
        hooks.on("completion:response", self._on_response)
        hooks.on("parse:error", self._on_parse_error)
        return hooks

    def _on_request(self, *args: Any, **kwargs: Any) -> None:
        """A second request inside one instructor call is a re-ask: that retry's one WARNING line
        (logged as it starts, whatever re-ask policy the provider gave instructor)."""
        self.requests += 1
        self.asked += 1
        if self.asked > 1:
            log.warning("%s output %d of %d does not fit the expected structure (%s); asking again",
                        self.spec, self.asked - 1, self.asks, self.unfit)
        self.unfit = "unusable output"

    def _on_parse_error(self, error: Exception, *args: Any, **kwargs: Any) -> None:
        self.unfit = why(error)

    def _on_response(self, response: Any) -> None:
        if _is_empty(response):
            self.empty += 1
        try:
            tokens_in, tokens_out = self.tokens_of(response)
        except Exception:  # usage is best effort, never a failure
            return
        self.input_tokens += tokens_in or 0
        self.output_tokens += tokens_out or 0


async def structured_call(
    *,
    provider: str,
    model: str,
    max_retries: int,
    timeout: float,
    call: Callable[[Hooks], Awaitable[tuple[T, Any]]],
    tokens_of: Callable[[Any], tuple[int, int]],
    key_env: str = "",
    backoff: Backoff = Backoff(),
    retryable: Judge | None = None,
) -> Completion[T]:
    """Run `call(hooks)` (an instructor create_with_completion) with transport retries.

    `timeout` bounds each HTTP request (the provider passes it to its SDK); a guard of
    `timeout x requests` covers an SDK that would ignore it.
    """
    attempts = max(max_retries, 0) + 1
    meter = _Meter(tokens_of, spec=f"{provider}/{model}", asks=attempts)
    started = time.perf_counter()

    def usage(error: str | None = None) -> Usage:
        return Usage(provider=provider, model=model, input_tokens=meter.input_tokens,
                     output_tokens=meter.output_tokens, latency_ms=(time.perf_counter() - started) * 1000,
                     requests=meter.requests, error=error)

    from tenacity import AsyncRetrying, retry_if_exception

    retrying = AsyncRetrying(
        stop=backoff.stopper(attempts),
        wait=backoff.wait,
        retry=retry_if_exception(lambda e: isinstance(e, TransientProviderError)),
        before_sleep=backoff.announce(provider, model, attempts),
        reraise=True,
    )
    try:
        with handled_by_askdesk():
            async for attempt in retrying:
                with attempt:
                    # the SDK gets `timeout` per request; this guard covers an SDK that ignores it
                    # (instructor re-asks included) and the turn's deadline
                    guard = bounded(timeout * attempts + 1.0)
                    empty_before = meter.empty
                    try:
                        async with asyncio.timeout(guard):
                            output, _raw = await call(meter.hooks())
                    except Exception as exc:
                        if meter.empty > empty_before and not isinstance(exc, TimeoutError):
                            raise ProviderError(f"{provider} returned an empty response (no choices)",
                                                provider=provider, retryable=True) from exc
                        raise classify(exc, provider=provider, timeout=min(timeout, guard), key_env=key_env,
                                       retryable=retryable) from exc
    except ProviderError as err:
        err.attempts = [usage(str(err))]
        raise
    return Completion(output=output, usage=usage())
