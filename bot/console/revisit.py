"""The Revisit page: answers that cited a document which changed or went away after they were
given (agent/revisit.py: listed by the sync or ingest that changed it), newest first, with what
became of each (listed, noted in its thread, private); and the regression cases, with those the
last sync found no longer finding their source (agent/evaluation/regressions.py). Both are read
from small SQLite and YAML files in the data dir, off the event loop."""

from __future__ import annotations

import asyncio
from typing import Any

from aiohttp import web

from bot.console.shared import console_of

STATUS_TEXT = {"listed": "listed", "pending": "note due", "noted": "noted with a new answer",
               "noted_without_answer": "noted (question not stored)", "private": "private: never noted",
               "undeliverable": "note not delivered"}
SHOWN_CASES = 300


class RevisitPage:
    """The page's handler; it keeps the parsed regression cases until their file changes (parsing
    YAML costs tens of milliseconds per 200 cases)."""

    def __init__(self) -> None:
        self._cases: tuple[tuple[int, int], list[Any]] | None = None

    def cases(self, settings: Any) -> list[Any]:
        from agent.evaluation.regressions import load_cases, path_of

        try:
            stat = path_of(settings).stat()
        except FileNotFoundError:
            return []
        key = (stat.st_mtime_ns, stat.st_size)
        if self._cases is None or self._cases[0] != key:
            self._cases = (key, load_cases(settings))
        return self._cases[1]

    def data(self, settings: Any) -> dict[str, Any]:
        """The revisit list, the regression cases and the latest sync's regression check."""
        from agent.revisit import FILE, open_log
        from agent.sources.state import SyncState

        revisits, total = [], 0
        if (settings.data_dir / FILE).exists():
            log = open_log(settings)
            try:
                revisits, total = log.revisits(), log.count()
            finally:
                log.close()
        checked: dict[str, Any] | None = None
        checked_at: float | None = None
        if (settings.data_dir / "sources.sqlite").exists():
            state = SyncState(settings.data_dir / "sources.sqlite")
            try:
                for name in state.names():
                    row = state.source(name)
                    report = (row.last_report or {}) if row else {}
                    if report.get("regressions") and (checked_at is None or (row.last_sync or 0) > checked_at):
                        checked, checked_at = report["regressions"], row.last_sync
            finally:
                state.close()
        lost = {item["id"] for item in (checked or {}).get("lost", [])}
        cases = sorted(self.cases(settings), key=lambda c: c.id not in lost)  # the lost ones first
        return {"revisits": revisits, "total": total, "cases": cases[:SHOWN_CASES], "case_count": len(cases),
                "checked": checked, "checked_at": checked_at, "lost": lost, "days": settings.revisit_days,
                "notify": settings.revisit_notify}

    async def handle(self, request: web.Request) -> web.Response:
        console = console_of(request)
        data = await asyncio.to_thread(self.data, console.settings)
        return console.render(request, "revisit.html", status_text=STATUS_TEXT, **data)


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/revisit", RevisitPage().handle)
