"""The Overview and Gaps pages: the knowledge-gap report (agent/report) of a date range and,
optionally, one surface (bot/console/reports.py), and its JSON at /api/report. Charts are
inline SVG drawn from the figures (no image is rendered, no script runs)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from aiohttp import web

from agent.report.figures import OUTCOMES
from agent.report.page import summary_rows
from bot.console.reports import Computed, Window
from bot.console.shared import console_of

CHART_HEIGHT = 120
CHART_WIDTH = 720


def window_of(request: web.Request) -> Window:
    return Window.parse(request.query, datetime.now(timezone.utc).date())


def day_bars(computed: Computed) -> list[dict[str, Any]]:
    """One bar per day: its x, height and label (counts per surface in its tooltip)."""
    per_day = computed.report.figures.per_day
    most = max((sum(c.values()) for c in per_day.values()), default=0)
    step = CHART_WIDTH / max(len(per_day), 1)
    bars = []
    for i, (day, counts) in enumerate(per_day.items()):
        total = sum(counts.values())
        height = round(CHART_HEIGHT * total / most) if most else 0
        detail = ", ".join(f"{s} {n}" for s, n in sorted(counts.items()))
        bars.append({"day": day, "total": total, "x": round(i * step + step * 0.1, 1), "width": round(step * 0.8, 1),
                     "y": CHART_HEIGHT - height, "height": height, "title": f"{day}: {total}" + (f" ({detail})" if detail else "")})
    return bars


async def report_context(request: web.Request) -> dict[str, Any]:
    console = console_of(request)
    window = window_of(request)
    computed = await console.reports.get(window)
    surfaces = sorted(console.reports.surfaces | ({window.surface} if window.surface else set()))
    return {"window": window, "computed": computed, "report": computed.report, "figures": computed.report.figures,
            "surfaces": surfaces}


async def overview(request: web.Request) -> web.Response:
    context = await report_context(request)
    figures = context["figures"]
    outcomes = [(o.replace("_", "-"), figures.outcomes[o], figures.shares[o]) for o in OUTCOMES]
    return console_of(request).render(request, "overview.html", summary=summary_rows(context["report"]),
                                      bars=day_bars(context["computed"]), outcomes=outcomes,
                                      chart_width=CHART_WIDTH, chart_height=CHART_HEIGHT, **context)


async def gaps(request: web.Request) -> web.Response:
    """The gap groups, each with a form that turns it into a learned answer (bot/console/learned.py)."""
    context = await report_context(request)
    return console_of(request).render(request, "gaps.html", **context)


async def report_json(request: web.Request) -> web.Response:
    computed = await console_of(request).reports.get(window_of(request))
    return web.json_response({**computed.report.as_dict(), "computed_at": computed.at})


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/", overview)
    router.add_get("/gaps", gaps)
    router.add_get("/api/report", report_json)
