"""The Escalations page: the questions passed to a person ("Ask a person") in a date range, open
and answered, with who answered, how long a person took to reply and the learned answer saved
from it, read from the state store (`Escalations.escalations`)."""

from __future__ import annotations

from datetime import datetime, timezone
from statistics import median
from typing import Any

from aiohttp import web

from bot.console.reports import Window
from bot.console.shared import console_of

SHOWN = 300  # rows on the page, the newest first
DAYS = 30


def minutes(value: float | None) -> str:
    if value is None:
        return "–"
    if value < 90:
        return f"{value:.0f} min"
    return f"{value / 60:.1f} h"


async def escalations_page(request: web.Request) -> web.Response:
    console = console_of(request)
    now = datetime.now(timezone.utc)
    window = Window.parse(request.query, now.date(), DAYS)
    wanted = request.query.get("status")
    status = wanted if wanted in ("open", "answered") else "all"
    since, until = window.bounds(now)
    found = [e for e in await console.askdesk.state.escalations(since) if e.created_at <= until
             and (window.surface is None or e.surface == window.surface)]
    waits = [(e.answered_at - e.created_at).total_seconds() / 60 for e in found
             if e.status == "answered" and e.answered_at is not None]
    rows: list[dict[str, Any]] = []
    for e in sorted(found, key=lambda e: e.created_at, reverse=True):
        if status != "all" and e.status != status:
            continue
        wait = (e.answered_at - e.created_at).total_seconds() / 60 if e.answered_at is not None else None
        rows.append({"e": e, "asker": e.asker_name or e.asker, "expert": e.expert_name or e.expert_id or "",
                     "wait": minutes(wait)})
    counts = {"all": len(found), "open": sum(e.status == "open" for e in found),
              "answered": sum(e.status == "answered" for e in found)}
    return console.render(request, "escalations.html", window=window, shown=status, rows=rows[:SHOWN],
                          more=max(0, len(rows) - SHOWN), counts=counts,
                          median_wait=minutes(median(waits)) if waits else "–")


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/escalations", escalations_page)
