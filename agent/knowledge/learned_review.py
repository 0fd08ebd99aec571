"""Learned answers age: the round that expires them and asks their owners to review them.

An answer is cited until its review date (saved or last confirmed + ASKDESK_LEARNED_REVIEW_DAYS).
`ASKDESK_LEARNED_REMIND_DAYS` before it, its owner gets one message on the surface they saved it
from (a Slack DM, a Teams personal chat) with Confirm, Edit and Retire; the message is sent once
per review date (the date it was sent for is kept in the answer's file, so a confirmation, which
moves the date, makes the next one due again). Past the date an unconfirmed answer's passages
leave the index (`LearnedAnswers.expire_due`); an owner who was never reminded gets the message
then. `askdesk serve` runs the round hourly (`keep_reviewed`), on the service's clock, which
tests move forward; without a running bot, `askdesk learned review` does the expiring part (no
surface is there to message anyone).

Replicas sharing the folder take turns through a claim on the state store, so an owner is not
messaged twice for one date.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Protocol

from pydantic import BaseModel, Field

from agent.knowledge.language import message_language
from agent.knowledge.learned import LearnedAnswers
from agent.learned import LearnedAnswer, Notifier, Reminder
from agent.state import Citation, Claims, TurnLog

log = logging.getLogger("askdesk.learned")

ROUND_S = 3600.0  # an hour between rounds: review dates are days apart
SENDING_TTL_S = 600.0  # one replica sends an owner's message; another may retry after this


class ReviewRound(BaseModel):
    """What one round did (logged; tests read it)."""

    expired: list[str] = Field(default_factory=list)
    reminded: list[str] = Field(default_factory=list)
    unreached: list[str] = Field(default_factory=list)  # due, but no surface here reaches the owner or it failed


class ReviewStore(Claims, TurnLog, Protocol):
    """What the round needs of the state store: claims (one sender) and the turns (citations)."""


async def answered_since(turns: TurnLog, answers: list[LearnedAnswer]) -> dict[str, list[Citation]]:
    """Each answer's citations since it was saved or last confirmed (one query for all of them)."""
    if not answers:
        return {}
    since = {a.name: a.since for a in answers}
    found: dict[str, list[Citation]] = {a.name: [] for a in answers}
    for citation in await turns.citations(list(since), min(since.values())):
        if citation.created_at >= since[citation.source]:
            found[citation.source].append(citation)
    return found


class Reviews:
    """Expire what is past its date and remind owners of what is (nearly) due."""

    def __init__(self, answers: LearnedAnswers, store: ReviewStore, notifiers: Mapping[str, Notifier]) -> None:
        self.answers = answers
        self.store = store
        self.notifiers = dict(notifiers)

    async def run(self) -> ReviewRound:
        done = ReviewRound(expired=[a.name for a in await self.answers.expire_due()])
        due = [a for a in self.answers.listed() if self.answers.status(a) != "current"
               and a.reminded != self.answers.review_by(a).date().isoformat()]
        cited = await answered_since(self.store, due) if due else {}
        for answer in due:
            status = self.answers.status(answer)
            review_by = self.answers.review_by(answer)
            notify = self.notifiers.get(answer.owner.surface) if answer.owner is not None else None
            if notify is None:
                done.unreached.append(answer.name)
                continue
            if not await self.store.claim(f"learned-review:{answer.name}:{review_by.date()}", SENDING_TTL_S):
                continue  # another replica is sending it
            try:
                sent = await notify(Reminder(answer=answer, review_by=review_by, expired=status == "expired",
                                             cited=len(cited.get(answer.name, [])),
                                             language=message_language(answer.question)))
            except Exception as exc:  # one owner's failure never stops the others'
                log.warning("learned: the review message for %s failed: %s", answer.name, type(exc).__name__)
                sent = False
            if sent:
                self.answers.remember_reminder(answer.name, review_by)
                done.reminded.append(answer.name)
            else:
                done.unreached.append(answer.name)
        if done.expired or done.reminded:
            log.info("learned answers: %d expired, %d owners reminded", len(done.expired), len(done.reminded))
        return done


async def keep_reviewed(reviews: Reviews, stop: asyncio.Event, every_s: float = ROUND_S) -> None:
    """Run a round every `every_s` seconds until `stop` is set (a failed round is logged, and retried)."""
    while not stop.is_set():
        try:
            await reviews.run()
        except Exception as exc:
            log.warning("learned: the review round failed: %s: %s", type(exc).__name__, exc)
        try:
            await asyncio.wait_for(stop.wait(), timeout=every_s)
        except asyncio.TimeoutError:
            pass
