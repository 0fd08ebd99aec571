"""An `AnswerResult` as a Teams message: Markdown text, the AI-generated label, citation
entities for the `[n]` markers the answer really uses and the feedback loop.

Citations are numbered like the Slack sources list (`references[n-1]` is `[n]`, at most
MAX_SOURCES), so the same answer reads the same on both surfaces. Teams turns each cited
`[n]` into a link with a pop-up (title, section, URL); a marker beyond the references
stays plain text. An answer that cites nothing inline but has references gets a short
sources line instead, so no answer loses its sources.

An answer that holds a table is an Adaptive Card instead (`table_activities`): Teams draws no
Markdown table in a message, and a card `Table` keeps every row whole.

The answer, the sources' titles and sections and the notice are rendered by `teams_text`
(bot/teams/escape.py) before our own markup (the bold heading, the notice's italics, the
citation entities) is added: no document or model output can mention anyone, inject HTML or
hide a link's address.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from microsoft_teams.api import AdaptiveCardAttachment, CitationAppearance, MessageActivityInput, card_attachment

from agent.answers import AnswerResult
from agent.references import Reference
from agent.tables import has_table
from bot.teams.cards import answer_cards
from bot.teams.escape import teams_text

MAX_SOURCES = 8  # as many as the Slack sources list shows
NAME_CHARS = 80  # Teams limits of a citation's appearance
ABSTRACT_CHARS = 160
FIXED_ROUTES = {"offtopic", "smalltalk"}  # refusals and greetings: fixed texts, never model-written
_MARKER = re.compile(r"\[(\d{1,2})\]")


def clip(text: str, limit: int) -> str:
    """`text` (untrusted) rendered for Teams, on one line, at most `limit` characters."""
    text = " ".join(teams_text(text).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def used_markers(answer: str, references: list[Reference]) -> list[int]:
    """The `[n]` markers in the text that point at a reference, in numeric order."""
    count = min(len(references), MAX_SOURCES)
    return sorted({int(n) for n in _MARKER.findall(answer) if 1 <= int(n) <= count})


def appearance(ref: Reference) -> CitationAppearance:
    url = ref.url if ref.url and ref.url.startswith(("http://", "https://")) else None
    return CitationAppearance(
        name=clip(ref.title or ref.source, NAME_CHARS),
        abstract=clip(ref.section or ref.label(), ABSTRACT_CHARS),
        url=url,
    )


def is_ai_generated(result: AnswerResult) -> bool:
    """Text written by a model: an agent answer, not a fixed refusal, search-only passages or an apology."""
    if result.search_only or result.llm_calls == 0 or result.route in FIXED_ROUTES:
        return False
    return bool(result.references or result.tool_calls or result.confidence is not None or result.route == "clarify")


@dataclass
class RenderedAnswer:
    activity: MessageActivityInput
    cited: list[int]
    feedback: bool
    more: list[MessageActivityInput] = field(default_factory=list)  # the rest of an answer too large for one message


def sources_line(references: list[Reference], heading: str) -> str:
    labels = [f"[{n}] {clip(r.label(), 120)}" for n, r in enumerate(references[:MAX_SOURCES], start=1)]
    return f"**{teams_text(heading)}:** " + " · ".join(labels)


def table_activities(result: AnswerResult, *, notice: str | None, sources_heading: str) -> list[MessageActivityInput]:
    """An answer that holds tables: Adaptive Cards with its text and tables in order
    (bot/teams/cards.py), its sources and notice last, one per message (a long answer takes
    more than one); the messages' text is empty (the card is the answer, said once)."""
    extra = [sources_line(result.references, sources_heading) if result.references else "",
             f"_ℹ️ {teams_text(notice)}_" if notice else ""]
    activities = []
    for card in answer_cards(result.answer, extra):
        activity = MessageActivityInput(text="")
        activity.add_attachments(card_attachment(AdaptiveCardAttachment(content=card)))
        activities.append(activity)
    return activities


def answer_activity(result: AnswerResult, *, notice: str | None, feedback: bool, sources_heading: str) -> RenderedAnswer:
    if has_table(result.answer or ""):
        activity, *more = table_activities(result, notice=notice, sources_heading=sources_heading)
        if is_ai_generated(result):
            activity.add_ai_generated()
        if feedback:
            activity.add_feedback()
        return RenderedAnswer(activity=activity, cited=[], feedback=feedback, more=more)
    text = teams_text((result.answer or "…").strip())
    cited = used_markers(text, result.references)
    if result.references and not cited and not result.search_only:
        text += "\n\n" + sources_line(result.references, sources_heading)
    if notice:
        text += f"\n\n_ℹ️ {teams_text(notice)}_"
    activity = MessageActivityInput(text=text)
    for n in cited:
        activity.add_citation(n, appearance(result.references[n - 1]))
    if is_ai_generated(result):
        activity.add_ai_generated()
    if feedback:
        activity.add_feedback()
    return RenderedAnswer(activity=activity, cited=cited, feedback=feedback)
