"""A learned answer as every layer sees it (the service, the surfaces' review buttons, the
console): who owns it, when it was last reviewed, and whether it is still cited. The folder and
the index are agent/knowledge/learned.py's; the review round is agent/knowledge/learned_review.py's."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import date, datetime, timedelta, timezone
from typing import Literal

from pydantic import BaseModel

Status = Literal["current", "due", "expired"]


class Owner(BaseModel):
    """Who answers for a learned answer: asked to review it, and allowed to press its buttons.
    `surface` is where they are reached ("slack", "teams"; "console": an admin without a chat
    id, reviewed in the console only); a Teams owner needs the Bot Connector and tenant of the
    press that saved it to be messaged first."""

    surface: str
    id: str
    name: str = ""
    service_url: str | None = None
    tenant: str | None = None


class LearnedAnswer(BaseModel):
    name: str  # the file's name: its source in the knowledge base
    question: str
    expert: str
    date: str  # the "Answered by" line's date
    answer: str = ""
    owner: Owner | None = None
    reviewed: datetime | None = None  # saved or last confirmed (None: a file from before reviews, see `since`)
    expired: bool = False  # past its review date: its passages are out of the index
    reminded: str | None = None  # the review date (ISO) its owner was last messaged about
    audience: list[str] | None = None

    @property
    def since(self) -> datetime:
        """When it was saved or last confirmed (an older file: its "Answered by" date)."""
        if self.reviewed is not None:
            return self.reviewed
        try:
            return datetime.combine(date.fromisoformat(self.date), datetime.min.time(), timezone.utc)
        except ValueError:
            return datetime(1970, 1, 1, tzinfo=timezone.utc)

    def review_by(self, days: int) -> datetime:
        return self.since + timedelta(days=days)

    def status(self, now: datetime, days: int, remind_days: int) -> Status:
        """current, due (within `remind_days` of its review date) or expired (past it)."""
        review = self.review_by(days)
        if self.expired or now >= review:
            return "expired"
        return "due" if now >= review - timedelta(days=remind_days) else "current"


class Reminder(BaseModel):
    """What an owner is told: the answer, its review date, and whether it is no longer cited."""

    answer: LearnedAnswer
    review_by: datetime
    expired: bool
    cited: int = 0  # questions it has answered since it was saved or last confirmed
    language: str | None = None  # its question's, when clear: the reminder is said in it


# a surface's way of messaging an owner it knows (bot/slack/learned_review.py, bot/teams/...):
# True when the message was delivered
Notifier = Callable[[Reminder], Awaitable[bool]]
