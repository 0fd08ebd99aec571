"""Per-user question rate limit (sliding window), counted in the state store so replicas
share it.

A user who asks faster than `rate_limit_per_minute` gets a friendly note with the seconds
until the next question is accepted, instead of queuing expensive agent runs.
"""

from __future__ import annotations

import math

from agent.state import RateLimits


class RateLimiter:
    def __init__(self, state: RateLimits, per_minute: int, window_seconds: float = 60.0) -> None:
        self.state = state
        self.per_minute = per_minute
        self.window = window_seconds

    async def check(self, user_id: str) -> float:
        """Record a question; return 0 when allowed, else the whole seconds to wait (at least 1)."""
        if self.per_minute <= 0:
            return 0.0
        wait = await self.state.rate_hit(user_id, self.per_minute, self.window)
        return float(max(1, math.ceil(wait))) if wait > 0 else 0.0
