"""The turn's deadline, visible to every model call under it.

A context variable rather than a parameter: the service sets it once per turn and the router,
the agent loop, the fallback chain and the transport retries all read the same budget without
threading an argument through every signature. Nested deadlines only ever shorten it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_DEADLINE: ContextVar[float | None] = ContextVar("askdesk_deadline", default=None)


@contextmanager
def deadline(seconds: float | None) -> Iterator[None]:
    """Code inside has at most `seconds` (None: no limit of its own) from now."""
    if seconds is None:
        yield
        return
    until = time.monotonic() + max(seconds, 0.0)
    current = _DEADLINE.get()
    token = _DEADLINE.set(until if current is None else min(current, until))
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def remaining() -> float | None:
    """Seconds left before the deadline (<= 0: spent), or None when there is none."""
    until = _DEADLINE.get()
    return None if until is None else until - time.monotonic()


def bounded(seconds: float) -> float:
    """`seconds`, or less when the deadline is nearer (never below a few milliseconds)."""
    left = remaining()
    return seconds if left is None else max(min(seconds, left), 0.005)


ROUTER_SHARE = 0.4  # the router model's part of a turn: past it, the LLM-free pre-filter routes


def reserve(turn_seconds: float) -> float:
    """Time kept back from the models to answer without them (search-only) when they fail."""
    return min(2.0, 0.15 * turn_seconds)
