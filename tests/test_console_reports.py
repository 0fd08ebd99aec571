"""The console's report windows (bot/console/reports.py): what a page's date and surface fields
mean, the state store narrowed to them, and a window's report computed once, kept for
`report_fresh_s`, and refreshed in the background while the kept one is shown."""

from __future__ import annotations

import asyncio
from datetime import date, datetime, timedelta, timezone

from agent.state.base import TurnRecord
from agent.state.memory import MemoryState
from bot.console.reports import MAX_DAYS, Reports, Window

TODAY = date(2026, 3, 10)


def test_a_window_is_read_from_the_page_fields_and_anything_else_is_the_default():
    assert Window.parse({}, TODAY) == Window(date(2026, 3, 4), TODAY)
    assert Window.parse({"from": "2026-03-09", "to": "2026-03-01", "surface": "teams"}, TODAY) == \
        Window(date(2026, 3, 1), date(2026, 3, 9), "teams")  # reversed dates are swapped
    assert Window.parse({"from": "March", "to": "2026-03-01"}, TODAY) == Window(date(2026, 3, 4), TODAY)
    assert Window.parse({"surface": "<script>"}, TODAY).surface is None
    assert Window.parse({"surface": "my-chat"}, TODAY).surface == "my-chat"
    long = Window.parse({"from": "2000-01-01", "to": "2026-03-10"}, TODAY)
    assert (long.end - long.start).days == MAX_DAYS - 1
    since, until = Window(TODAY, TODAY).bounds(datetime(2026, 3, 10, 12, tzinfo=timezone.utc))
    assert since == datetime(2026, 3, 10, tzinfo=timezone.utc) and until == datetime(2026, 3, 10, 12, tzinfo=timezone.utc)


class CountingState(MemoryState):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def turns(self, since):
        self.reads += 1
        await asyncio.sleep(0.01)
        return await super().turns(since)


async def seeded() -> CountingState:
    state = CountingState()
    now = datetime.now(timezone.utc)
    for surface, outcome, age in (("slack", "answered", 1), ("teams", "answered", 2), ("slack", "refused", 3),
                                  ("slack", "answered", 24 * 20)):
        await state.record_turn(TurnRecord(created_at=now - timedelta(hours=age), surface=surface, outcome=outcome))
    return state


async def test_a_window_narrows_every_figure_to_its_days_and_surface():
    state = await seeded()
    reports = Reports(state, None, fresh_s=60)
    today = datetime.now(timezone.utc).date()
    everything = (await reports.get(Window.default(today))).report.figures
    slack = (await reports.get(Window(today - timedelta(days=6), today, "slack"))).report.figures
    assert everything.questions == 3  # the 20-day-old turn is outside the week
    assert (slack.questions, slack.outcomes["refused"], slack.surfaces) == (2, 1, ["slack"])
    assert reports.surfaces == {"slack", "teams"}


async def test_a_report_is_kept_then_refreshed_in_the_background():
    state = await seeded()
    window = Window.default(datetime.now(timezone.utc).date())
    kept = Reports(state, None, fresh_s=60)
    first, again = await asyncio.gather(kept.get(window), kept.get(window))  # one computation for both
    assert first is again and state.reads == 1
    assert await kept.get(window) is first and state.reads == 1  # fresh: not read again

    stale = Reports(state, None, fresh_s=0)
    first = await stale.get(window)
    assert state.reads == 2
    assert await stale.get(window) is first  # shown at once while the next one is computed
    await asyncio.sleep(0.1)
    assert state.reads == 3 and await stale.get(window) is not first
