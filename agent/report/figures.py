"""The report's numbers, from the state store's records: how many questions, how they ended,
what people thought of the answers, how fast a person took over, which documents carried the
answers. Pure functions over lists, so a week of 100,000 turns is counted in well under a second."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from statistics import median

from agent.state.base import Escalation, TurnRecord
from agent.state.feedback import Feedback

OUTCOMES = ("answered", "search_only", "unanswerable", "refused", "clarify", "error")
TOP_DOCUMENTS = 10


@dataclass
class Figures:
    since: datetime
    until: datetime
    questions: int = 0
    per_day: dict[str, dict[str, int]] = field(default_factory=dict)  # "YYYY-MM-DD" -> surface -> count
    outcomes: dict[str, int] = field(default_factory=dict)
    shares: dict[str, float] = field(default_factory=dict)  # outcome -> share of questions
    thumbs_up: int = 0
    thumbs_down: int = 0
    escalations: int = 0
    escalations_answered: int = 0
    median_reply_minutes: float | None = None  # time to a person's first reply
    overridden: int = 0  # refusals the asker overrode ("Search the documents anyway"): wrong refusals
    top_documents: list[tuple[str, int]] = field(default_factory=list)

    @property
    def up_rate(self) -> float | None:
        rated = self.thumbs_up + self.thumbs_down
        return self.thumbs_up / rated if rated else None

    @property
    def down_rate(self) -> float | None:
        rated = self.thumbs_up + self.thumbs_down
        return self.thumbs_down / rated if rated else None

    @property
    def surfaces(self) -> list[str]:
        return sorted({s for day in self.per_day.values() for s in day})

    def as_dict(self) -> dict:
        return {
            "since": self.since.isoformat(), "until": self.until.isoformat(), "questions": self.questions,
            "per_day": self.per_day, "outcomes": self.outcomes, "shares": self.shares,
            "feedback": {"up": self.thumbs_up, "down": self.thumbs_down, "up_rate": self.up_rate,
                         "down_rate": self.down_rate},
            "escalations": {"total": self.escalations, "answered": self.escalations_answered,
                            "median_reply_minutes": self.median_reply_minutes},
            "top_documents": [{"source": s, "citations": n} for s, n in self.top_documents],
            "refusals_overridden": self.overridden,
        }


def days(since: datetime, until: datetime) -> list[str]:
    """Every calendar day (UTC) of the period, so quiet days show as zero."""
    out, day = [], since.date()
    while day <= until.date():
        out.append(day.isoformat())
        day += timedelta(days=1)
    return out


def figures(turns: list[TurnRecord], feedback: list[Feedback], escalations: list[Escalation], *,
            since: datetime, until: datetime) -> Figures:
    """Count the period's records (commands are not questions and are left out)."""
    fig = Figures(since=since, until=until)
    per_day: dict[str, Counter] = {d: Counter() for d in days(since, until)}
    outcomes: Counter = Counter()
    cited: Counter = Counter()
    for turn in turns:
        if turn.outcome == "command":
            continue
        outcomes[turn.outcome] += 1
        per_day.setdefault(turn.created_at.date().isoformat(), Counter())[turn.surface] += 1
        cited.update(set(turn.sources))
        fig.overridden += turn.overridden
    fig.questions = sum(outcomes.values())
    fig.per_day = {d: dict(c) for d, c in sorted(per_day.items())}
    fig.outcomes = {o: outcomes.get(o, 0) for o in OUTCOMES}
    fig.shares = {o: (n / fig.questions if fig.questions else 0.0) for o, n in fig.outcomes.items()}
    fig.thumbs_up = sum(1 for f in feedback if f.rating == "up")
    fig.thumbs_down = sum(1 for f in feedback if f.rating == "down")
    fig.escalations = len(escalations)
    waits = [(e.answered_at - e.created_at).total_seconds() / 60 for e in escalations
             if e.status == "answered" and e.answered_at is not None]
    fig.escalations_answered = len(waits)
    fig.median_reply_minutes = round(median(waits), 1) if waits else None
    fig.top_documents = cited.most_common(TOP_DOCUMENTS)
    return fig
