"""The knowledge-gap report in Slack's App Home tab, for the people in `ASKDESK_ADMINS` only.

Opening the Home tab (`app_home_opened`, tab "home") publishes the last 7 days' report as a view
(`views.publish`) for an admin; anyone else gets nothing, so the tab stays empty. Block Kit cannot
show an image from the page, so the figures are text bars (agent/report/text.py); the HTML with
charts is `askdesk report --html`. A report is computed at most once a minute however many admins
open the tab, and the embedder caches the gap questions' vectors between reports."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agent.config import Settings
from agent.report import Report, build_report, query_embed
from agent.report.page import summary_rows
from agent.report.text import cluster_lines, document_lines, per_day_lines
from bot.slack.escape import safe_mrkdwn
from bot.slack.reply import describe

log = logging.getLogger("askdesk.slack")

PERIOD = timedelta(days=7)
FRESH_S = 60.0
TEXT_MAX = 2900  # a section's text is at most 3,000 characters


async def latest_report(askdesk: Any) -> Report:
    """The last PERIOD's report, reused for FRESH_S (kept on the service object: one per process)."""
    cached = getattr(askdesk, "_home_report", None)
    if cached is not None and time.monotonic() - cached[0] < FRESH_S:
        return cached[1]
    report = await build_report(askdesk.state, datetime.now(timezone.utc) - PERIOD,
                                embed=query_embed(askdesk.runtime.embedder()))
    askdesk._home_report = (time.monotonic(), report)
    return report


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:TEXT_MAX]}}


def code(lines: list[str]) -> str:
    return "```" + "\n".join(lines)[:TEXT_MAX - 6] + "```"


def home_view(report: Report) -> dict:
    """The Home tab's view: figures, questions per day, most-cited documents, gap groups."""
    f = report.figures
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": "Knowledge-gap report"}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text":
                                          f"{f.since:%Y-%m-%d} – {f.until:%Y-%m-%d %H:%M} UTC · "
                                          "`askdesk report --html FILE` draws the charts"}]},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{k}*\n{safe_mrkdwn(v)}"}
                                       for k, v in summary_rows(report)][:10]},
        {"type": "divider"},
        section("*Questions per day*\n" + code(per_day_lines(report))),
    ]
    if f.top_documents:
        blocks.append(section("*Most-cited documents*\n" + code(document_lines(report))))
    blocks.append({"type": "divider"})
    gaps = [safe_mrkdwn(note) for note in report.notes] + [safe_mrkdwn(line) for line in cluster_lines(report)]
    blocks.append(section("*Unanswered and down-voted questions, grouped by meaning*\n"
                          + ("\n".join(gaps) or "None in this period.")))
    return {"type": "home", "blocks": blocks}


async def home_opened(event: dict, client: AsyncWebClient, settings: Settings, askdesk: Any) -> None:
    """Publish the report for an admin; nothing for anyone else."""
    user = event.get("user")
    if not settings.is_admin(user):
        return
    try:
        view = home_view(await latest_report(askdesk))
    except Exception as exc:
        log.warning("slack: report for the Home tab unavailable (%s)", type(exc).__name__)
        view = {"type": "home", "blocks": [section("The report is unavailable right now; try again later.")]}
    try:
        await client.views_publish(user_id=user, view=view)
    except Exception as exc:
        log.info("slack: Home tab not published (%s)", describe(exc))
