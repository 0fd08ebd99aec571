"""Per-user question rate limit (sliding one-minute window).

A user who asks faster than `rate_limit_per_minute` gets a friendly note with the
seconds until the next question is accepted, instead of queuing expensive agent runs.
"""

from __future__ import annotations

import math
import time
from collections import deque


class RateLimiter:
    def __init__(self, per_minute: int, window_seconds: float = 60.0) -> None:
        self.per_minute = per_minute
        self.window = window_seconds
        self._hits: dict[str, deque[float]] = {}
        self._last_sweep = time.monotonic()

    def check(self, user_id: str) -> float:
        """Record a question; return 0 when allowed, else the seconds to wait."""
        if self.per_minute <= 0:
            return 0.0
        now = time.monotonic()
        self._sweep(now)
        hits = self._hits.setdefault(user_id, deque())
        while hits and now - hits[0] >= self.window:
            hits.popleft()
        if len(hits) >= self.per_minute:
            return max(1.0, math.ceil(hits[0] + self.window - now))
        hits.append(now)
        return 0.0

    def _sweep(self, now: float) -> None:
        """Forget idle users now and then so the table does not grow forever."""
        if now - self._last_sweep < self.window:
            return
        self._last_sweep = now
        for user in [u for u, h in self._hits.items() if not h or now - h[-1] >= self.window]:
            del self._hits[user]
