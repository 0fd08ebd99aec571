"""`report` typed to the bot by someone in `ASKDESK_ADMINS`: the last 7 days' knowledge-gap report
as an Adaptive Card (facts, questions per day and most-cited documents as text bars, the gap
groups), said in the activity's `locale` when askdesk speaks it, else English. Anyone else
typing `report` is answered as for any other message. No chart images: a
Teams message is limited to about 28 KB, and three PNGs alone are more; `askdesk report --html`
draws them."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from microsoft_teams.api import MessageActivityInput
from microsoft_teams.cards import AdaptiveCard, Fact, FactSet, TextBlock

from agent.prompts import PromptSet
from agent.report import Report, build_report, query_embed
from agent.report.page import summary_rows
from agent.report.text import cluster_lines, document_lines, per_day_lines
from bot.teams.cards import CARD_VERSION
from bot.teams.escape import teams_text

PERIOD = timedelta(days=7)
WORD = "report"


def wants_report(settings: Any, text: str, user_id: str) -> bool:
    """An admin's message that is just the word."""
    return text.strip().lower().lstrip("/") == WORD and settings.is_admin(user_id)


def monospace(lines: list[str]) -> TextBlock:
    return TextBlock(text="\n".join(teams_text(line) for line in lines) or " ", wrap=True, font_type="Monospace")


def report_card(report: Report, prompts: PromptSet) -> AdaptiveCard:
    """The report's card, its words in the language being spoken."""
    f, say = report.figures, prompts.render
    body: list[Any] = [
        TextBlock(text=teams_text(say("report_title")), weight="Bolder", size="Medium", wrap=True),
        TextBlock(text=f"{f.since:%Y-%m-%d} – {f.until:%Y-%m-%d %H:%M} UTC", is_subtle=True, spacing="None"),
        FactSet(facts=[Fact(title=teams_text(k), value=teams_text(v)) for k, v in summary_rows(report, prompts)]),
        TextBlock(text=teams_text(say("report_per_day")), weight="Bolder", separator=True),
        monospace(per_day_lines(report)),
    ]
    if f.top_documents:
        body += [TextBlock(text=teams_text(say("report_top_documents")), weight="Bolder"),
                 monospace(document_lines(report))]
    body.append(TextBlock(text=teams_text(say("report_gaps")), weight="Bolder", separator=True, wrap=True))
    body += [TextBlock(text=teams_text(note), wrap=True, is_subtle=True) for note in report.notes_said(prompts)]
    body.append(monospace(cluster_lines(report, prompts)) if report.clusters else
                TextBlock(text=teams_text(say("report_none")) if not report.gap_questions else " ", wrap=True))
    return AdaptiveCard(version=CARD_VERSION, body=body)


async def report_message(askdesk: Any) -> MessageActivityInput:
    report = await build_report(askdesk.state, datetime.now(timezone.utc) - PERIOD,
                                embed=query_embed(askdesk.runtime.embedder()))
    return MessageActivityInput().add_card(report_card(report, askdesk.prompts))
