"""A 👍/👎 on an answer: who, when, where (surface, channel, thread), the route and the cited
sources of the rated answer. The question text is kept only when `settings.store_text` is on:
by default the store holds no message content."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Literal

from pydantic import BaseModel, Field

Rating = Literal["up", "down"]


class Feedback(BaseModel):
    rating: Rating
    user_id: str
    surface: str = "slack"
    channel: str | None = None
    thread: str | None = None
    answer_id: str | None = None
    route: str | None = None
    sources: list[str] = Field(default_factory=list)
    question: str | None = None
    comment: str | None = None  # what the person wrote with a 👎 (a Slack modal, the Teams feedback form)
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
