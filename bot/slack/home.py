"""The knowledge-gap report in Slack's App Home tab, for the people in `ASKDESK_ADMINS` only.

Opening the Home tab (`app_home_opened`, tab "home") publishes the last 7 days' report as a view
(`views.publish`) for an admin; anyone else gets nothing, so the tab stays empty. Block Kit cannot
show an image from the page, so the figures are text bars (agent/report/text.py); the HTML with
charts is `askdesk report --html`. A report is computed at most once a minute however many admins
open the tab, and the embedder caches the gap questions' vectors between reports. The view is
said in the admin's Slack language (`users.info` locale), else English."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta, timezone
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agent.config import Settings
from agent.prompts import PromptSet, speaking
from agent.report import Report, build_report, query_embed
from agent.report.page import summary_rows
from agent.report.text import cluster_lines, document_lines, per_day_lines
from bot.note_language import locale_language
from bot.slack.escape import safe_mrkdwn
from bot.slack.people import user_locale
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


def home_view(report: Report, prompts: PromptSet) -> dict:
    """The Home tab's view: figures, questions per day, most-cited documents, gap groups, its
    words in the language being spoken."""
    f, say = report.figures, prompts.render
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": say("report_title")}},
        {"type": "context", "elements": [{"type": "mrkdwn", "text":
                                          f"{f.since:%Y-%m-%d} – {f.until:%Y-%m-%d %H:%M} UTC · "
                                          + say("report_charts_hint")}]},
        {"type": "section", "fields": [{"type": "mrkdwn", "text": f"*{safe_mrkdwn(k)}*\n{safe_mrkdwn(v)}"}
                                       for k, v in summary_rows(report, prompts)][:10]},
        {"type": "divider"},
        section(f"*{safe_mrkdwn(say('report_per_day'))}*\n" + code(per_day_lines(report))),
    ]
    if f.top_documents:
        blocks.append(section(f"*{safe_mrkdwn(say('report_top_documents'))}*\n" + code(document_lines(report))))
    blocks.append({"type": "divider"})
    gaps = [safe_mrkdwn(note) for note in report.notes_said(prompts)]
    gaps += [safe_mrkdwn(line) for line in cluster_lines(report, prompts)]
    blocks.append(section(f"*{safe_mrkdwn(say('report_gaps'))}*\n"
                          + ("\n".join(gaps) or safe_mrkdwn(say("report_none")))))
    return {"type": "home", "blocks": blocks}


async def home_opened(event: dict, client: AsyncWebClient, settings: Settings, askdesk: Any) -> None:
    """Publish the report for an admin; nothing for anyone else."""
    user = event.get("user")
    if not settings.is_admin(user):
        return
    prompts = askdesk.prompts
    with speaking(locale_language(prompts, await user_locale(client, user))):  # the admin's Slack language
        try:
            view = home_view(await latest_report(askdesk), prompts)
        except Exception as exc:
            log.warning("slack: report for the Home tab unavailable (%s)", type(exc).__name__)
            view = {"type": "home", "blocks": [section(safe_mrkdwn(prompts.render("report_unavailable")))]}
    try:
        await client.views_publish(user_id=user, view=view)
    except Exception as exc:
        log.info("slack: Home tab not published (%s)", describe(exc))
