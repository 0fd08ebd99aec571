"""The time of day as code that acts on dates reads it: one injectable `Clock`, so tests move
time forward (a learned answer's review date, its reminder) instead of waiting or patching."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""


class SystemClock:
    """The machine's clock."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class ManualClock:
    """A clock that stands still until moved (tests, benchmarks)."""

    def __init__(self, start: datetime | None = None) -> None:
        self.current = start or datetime.now(timezone.utc)

    def now(self) -> datetime:
        return self.current

    def advance(self, **delta: float) -> datetime:
        """Move forward by `timedelta(**delta)`; the new time."""
        self.current += timedelta(**delta)
        return self.current
