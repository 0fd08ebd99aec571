"""One streamed structured call: partial outputs while the model writes, then the whole one.

The provider modules open the stream through instructor (`create_partial`: the response
model wrapped in `Partial[...]`, parsed from the provider's JSON deltas with jiter's
partial mode); this module gives every provider the same behaviour around it:
- `on_partial(partial)` is awaited for each partial output; it returns True once it has put
  something in front of the user (e.g. answer text). Until then a failure is retried like
  a non-streamed call (transient errors with backoff, unusable output once more); after
  that nothing is retried here — the caller keeps what was shown and decides (the chain
  notes the failure and continues with the next model);
- `timeout` bounds the wait for each piece of the stream (a stalled stream fails, a long
  one that keeps flowing does not), and so does the turn's deadline (agent/deadline.py);
  retries on the same provider follow retry.py's rules (never after a timeout, only when
  they fit in the time left);
- usage comes from the stream's own usage chunk, recorded by `tap` (instructor's stream
  parsers skip it), so a streamed call is metered like any other;
- the end of the stream is validated against the caller's response model: a stream cut
  short or invalid is a ProviderError, never a half result returned as complete;
- so is a stream that ended cleanly but not with a whole answer (`stop_of` reads each chunk:
  a refusal, finish_reason "length", Gemini's MAX_TOKENS or SAFETY, a blocked prompt): jiter's
  partial mode completes a cut-off JSON string, so `answer: "Families earn` would validate.
  The same model would stop the same way again, so the chain moves on at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from contextlib import aclosing
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from agent.deadline import bounded
from agent.providers.base import Completion, ModelStopped, PartialFn, ProviderError, Usage
from agent.providers.handled import handled_by_askdesk
from agent.providers.retry import Backoff, Judge, classify

T = TypeVar("T", bound=BaseModel)


@dataclass
class StreamMeter:
    """HTTP requests and tokens of one streamed call (all its attempts), and why the current
    attempt's stream stopped short, if it did (`stop_of`: a chunk -> a reason or None)."""

    tokens_of: Callable[[Any], tuple[int, int]]
    stop_of: Callable[[Any], str | None] | None = None
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    stopped: str | None = None


_METER: ContextVar[StreamMeter | None] = ContextVar("askdesk_stream_meter", default=None)


async def tap(chunks: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Pass a provider's raw stream through, recording its usage into the current meter.
    Usage chunks are cumulative for the request, so the last one seen counts."""
    meter = _METER.get()
    if meter is not None:
        meter.requests += 1
    seen = (0, 0)
    try:
        async for chunk in chunks:
            if meter is not None:
                try:
                    tokens = meter.tokens_of(chunk)
                except Exception:  # usage is best effort, never a failure
                    tokens = (0, 0)
                if any(tokens):
                    seen = tokens
                if meter.stop_of is not None and meter.stopped is None:
                    try:
                        meter.stopped = meter.stop_of(chunk)
                    except Exception:  # an odd chunk is judged by validation instead
                        meter.stopped = None
            yield chunk
    finally:
        if meter is not None:
            meter.input_tokens += seen[0]
            meter.output_tokens += seen[1]


class StreamFailed(ProviderError):
    """The stream failed after something was shown: `shown` tells the caller to keep it."""


async def streamed_call(
    *,
    provider: str,
    model: str,
    max_retries: int,
    timeout: float,
    open_stream: Callable[[], AsyncIterator[Any]],
    response_model: type[T],
    on_partial: PartialFn,
    tokens_of: Callable[[Any], tuple[int, int]],
    stop_of: Callable[[Any], str | None] | None = None,
    key_env: str = "",
    backoff: Backoff = Backoff(),
    retryable: Judge | None = None,
) -> Completion[T]:
    from tenacity import AsyncRetrying, retry_if_exception

    meter = StreamMeter(tokens_of, stop_of)
    started = time.perf_counter()
    shown = False

    def usage(error: str | None = None) -> Usage:
        return Usage(provider=provider, model=model, input_tokens=meter.input_tokens,
                     output_tokens=meter.output_tokens, latency_ms=(time.perf_counter() - started) * 1000,
                     requests=max(meter.requests, 1), error=error)

    async def consume() -> T:
        nonlocal shown
        last: Any = None
        meter.stopped = None
        async with aclosing(open_stream()) as partials:  # type: ignore[type-var]
            while True:
                try:
                    async with asyncio.timeout(bounded(timeout)):  # the turn's deadline too
                        item = await anext(partials)
                except StopAsyncIteration:
                    break
                except Exception as exc:  # a parser choking on what a refusal or a cut left
                    if meter.stopped is not None:
                        raise ModelStopped(provider, meter.stopped) from exc
                    raise
                last = item
                if await on_partial(item):
                    shown = True
        if meter.stopped is not None:  # refused, cut off or blocked: never a result, however it parses
            raise ModelStopped(provider, meter.stopped)
        if last is None:  # like an empty response: asking the same provider again will not help
            raise ProviderError(f"{provider} ended the stream without output", provider=provider,
                                same_provider=False)
        # the last partial is the whole output only when the JSON was complete and valid
        return response_model.model_validate(last.model_dump(warnings=False))

    def worth_retrying(exc: BaseException) -> bool:
        return not shown and isinstance(exc, ProviderError) and exc.retryable

    attempts = max(max_retries, 0) + 1
    retrying = AsyncRetrying(stop=backoff.stopper(attempts), wait=backoff.wait,
                             retry=retry_if_exception(worth_retrying), reraise=True,
                             before_sleep=backoff.announce(provider, model, attempts))  # one WARNING per retry
    token = _METER.set(meter)
    try:
        with handled_by_askdesk():  # instructor's records of what is retried here are DEBUG
            async for attempt in retrying:
                with attempt:
                    opened = meter.requests
                    try:
                        output = await consume()
                    except Exception as exc:
                        if meter.requests == opened:  # refused before its stream opened (an HTTP error): a request
                            meter.requests += 1
                        error = classify(exc, provider=provider, timeout=timeout, key_env=key_env,
                                         retryable=retryable)
                        if shown and not isinstance(error, StreamFailed):
                            raise StreamFailed(str(error), provider=provider, retryable=error.retryable) from exc
                        if error is exc:
                            raise
                        raise error from exc
    except ProviderError as err:
        err.attempts = [usage(str(err))]
        err.shown = shown
        raise
    finally:
        _METER.reset(token)
    return Completion(output=output, usage=usage())
