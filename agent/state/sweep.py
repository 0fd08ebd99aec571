"""Expired claims, old rate-limit hits and old answer records are deleted now and then, so the
shared tables stay small however long the bot runs (at most once a minute per process)."""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

log = logging.getLogger("askdesk.state")

SWEEP_EVERY_S = 60.0
RATE_WINDOW_KEPT_S = 3600.0  # rate windows are at most this long
RECORD_DAYS = 30  # feedback on an answer older than this is stored without its record


class Sweeper:
    def __init__(self, sweep: Callable[[], Awaitable[None]]) -> None:
        self._sweep = sweep
        self._last = time.monotonic()

    async def maybe(self) -> None:
        now = time.monotonic()
        if now - self._last < SWEEP_EVERY_S:
            return
        self._last = now
        try:
            await self._sweep()
        except Exception as exc:  # housekeeping: the next sweep tries again
            log.info("state store: sweep skipped (%s)", type(exc).__name__)
