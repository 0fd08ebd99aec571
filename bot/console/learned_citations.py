"""The questions each learned answer has answered since it was saved or last confirmed, kept
between views of the Learned answers page: a view reads only the turns recorded since the
previous one (the `turns.created` index answers it), and an answer seen for the first time, or
confirmed since, is counted once from its own date. At 100,000 turns a full count takes a few
hundred milliseconds, done once when the console starts; the page's views, a few."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

from agent.learned import LearnedAnswer
from agent.state import Citation, TurnLog

# Turns are recorded when their answer is delivered, stamped when it started: re-read this much
# before the last read, so a turn that was still running then is not missed (duplicates are dropped).
OVERLAP = timedelta(minutes=10)


class LearnedCitations:
    def __init__(self, turns: TurnLog) -> None:
        self.turns = turns
        self.kept: dict[str, tuple[datetime, list[Citation]]] = {}  # name -> (counted since, citations)
        self.read_until: datetime | None = None
        self.lock = asyncio.Lock()  # one count at a time: the start's warm-up, then the views

    async def of(self, answers: list[LearnedAnswer]) -> dict[str, list[Citation]]:
        """Each answer's citations since it was saved or last confirmed, oldest first."""
        async with self.lock:
            return await self._of(answers)

    async def _of(self, answers: list[LearnedAnswer]) -> dict[str, list[Citation]]:
        now = datetime.now(timezone.utc)
        new = [a for a in answers if a.name not in self.kept or self.kept[a.name][0] != a.since]
        fresh = {a.name for a in new}
        known = [a.name for a in answers if a.name not in fresh]
        if known and self.read_until is not None:
            start = self.read_until - OVERLAP
            for c in await self.turns.citations(known, start):
                since, found = self.kept[c.source]
                if c.created_at >= since and not _counted(found, c, start):
                    found.append(c)
        if new:
            counted = {a.name: (a.since, []) for a in new}
            for c in await self.turns.citations(list(counted), min(a.since for a in new)):
                since, found = counted[c.source]
                if c.created_at >= since:
                    found.append(c)
            self.kept.update(counted)
        listed = {a.name for a in answers}
        for name in [n for n in self.kept if n not in listed]:
            del self.kept[name]
        self.read_until = now
        return {a.name: self.kept[a.name][1] for a in answers}


def _counted(found: list[Citation], c: Citation, start: datetime) -> bool:
    """Whether `c` was read already (only the overlap's citations, the newest, can be it)."""
    for k in reversed(found):
        if k.created_at < start:
            return False
        if (k.created_at, k.question) == (c.created_at, c.question):
            return True
    return False
