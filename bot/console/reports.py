"""The knowledge-gap report (agent/report) for the console's Overview and Gaps pages: a period of
whole UTC days and, optionally, one surface; computed by `build_report` itself, over the state
store narrowed to that window.

Reading a week of 100,000 turns takes over a second, so a window's report is kept and shown
again for `report_fresh_s`; an older one is shown at once while it is computed again in the
background (at most once at a time per window), and only a window never seen waits. The Slack
App Home does the same with its one report a minute."""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import OrderedDict
from dataclasses import dataclass
from datetime import date, datetime, time as day_time, timedelta, timezone
from typing import Any, Callable, Mapping, cast

from agent.report import Report, build_report, query_embed
from agent.state.base import Escalation, ReportSources, TurnRecord
from agent.state.feedback import Feedback

log = logging.getLogger("askdesk.console")

DEFAULT_DAYS = 7
MAX_DAYS = 400
KEPT = 16  # windows remembered
SURFACE_NAME = re.compile(r"[a-z][a-z0-9_-]{0,39}")  # agent/answers.py: `Surface`


@dataclass(frozen=True)
class Window:
    """Whole UTC days from `start` to `end`, both included, and one surface or all."""

    start: date
    end: date
    surface: str | None = None

    @classmethod
    def default(cls, today: date, days: int = DEFAULT_DAYS) -> "Window":
        return cls(today - timedelta(days=days - 1), today)

    @classmethod
    def parse(cls, query: Mapping[str, str], today: date, days: int = DEFAULT_DAYS) -> "Window":
        """From a page's `from`, `to` and `surface` fields; what cannot be read is the default."""
        fallback = cls.default(today, days)
        try:
            start = date.fromisoformat(query.get("from") or fallback.start.isoformat())
            end = date.fromisoformat(query.get("to") or fallback.end.isoformat())
        except ValueError:
            start, end = fallback.start, fallback.end
        start, end = min(start, end), max(start, end)
        start = max(start, end - timedelta(days=MAX_DAYS - 1))
        surface = (query.get("surface") or "").strip() or None
        return cls(start, end, surface if surface and SURFACE_NAME.fullmatch(surface) else None)

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        since = datetime.combine(self.start, day_time(0), tzinfo=timezone.utc)
        until = datetime.combine(self.end + timedelta(days=1), day_time(0), tzinfo=timezone.utc)
        return since, min(until - timedelta(microseconds=1), now)

    def query(self) -> dict[str, str]:
        out = {"from": self.start.isoformat(), "to": self.end.isoformat()}
        if self.surface:
            out["surface"] = self.surface
        return out


class Windowed:
    """The report's sources (`ReportSources`) narrowed to a window: before its end, of its surface."""

    def __init__(self, state: ReportSources, until: datetime, surface: str | None) -> None:
        self.state, self.until, self.surface = state, until, surface

    def _in(self, when: datetime, surface: str | None) -> bool:
        return when <= self.until and (self.surface is None or surface == self.surface)

    async def turns(self, since: datetime) -> list[TurnRecord]:
        return [t for t in await self.state.turns(since) if self._in(t.created_at, t.surface)]

    async def feedback(self, since: datetime) -> list[Feedback]:
        return [f for f in await self.state.feedback(since) if self._in(f.created_at, f.surface)]

    async def escalations(self, since: datetime) -> list[Escalation]:
        return [e for e in await self.state.escalations(since) if self._in(e.created_at, e.surface)]


@dataclass
class Computed:
    report: Report
    at: float  # time.time() when computed
    seconds: float  # how long it took


class Reports:
    """Each window's report, kept `fresh_s` and refreshed in the background (module docstring)."""

    def __init__(self, state: ReportSources, embedder: Callable[[], Any] | None, fresh_s: float) -> None:
        self.state = state
        self.embedder = embedder  # the runtime's (loaded on first use): it caches the gap questions' vectors
        self.fresh_s = fresh_s
        self._kept: OrderedDict[Window, Computed] = OrderedDict()
        self._running: dict[Window, asyncio.Task[Computed]] = {}
        self.surfaces: set[str] = set()  # every surface seen in a report, for the filter

    async def get(self, window: Window) -> Computed:
        kept = self._kept.get(window)
        if kept is not None and time.time() - kept.at < self.fresh_s:
            return kept
        task = self._running.get(window)
        if task is None:
            task = asyncio.create_task(self._compute(window))
            self._running[window] = task
            task.add_done_callback(lambda _: self._running.pop(window, None))
        if kept is not None:
            return kept  # stale for a moment; the new one replaces it when done
        return await asyncio.shield(task)

    async def _compute(self, window: Window) -> Computed:
        started = time.perf_counter()
        now = datetime.now(timezone.utc)
        since, until = window.bounds(now)
        sources = cast(ReportSources, Windowed(self.state, until, window.surface))
        embed = None
        try:
            embedder = self.embedder() if self.embedder is not None else None
            embed = query_embed(embedder) if embedder is not None else None
        except Exception as exc:  # the model cannot load: the figures still count, ungrouped
            log.warning("console: no embedder for the gap questions (%s)", type(exc).__name__)
        try:
            report = await build_report(sources, since, embed=embed, until=until)
        except Exception as exc:  # the embedder failed: the figures still count, ungrouped
            if embed is None:
                raise
            log.warning("console: grouping gap questions failed (%s): shown ungrouped", type(exc).__name__)
            report = await build_report(sources, since, embed=None, until=until)
        computed = Computed(report, time.time(), time.perf_counter() - started)
        self.surfaces.update(report.figures.surfaces)
        self._kept[window] = computed
        self._kept.move_to_end(window)
        while len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return computed

    async def close(self) -> None:
        for task in list(self._running.values()):
            task.cancel()
        await asyncio.gather(*self._running.values(), return_exceptions=True)
