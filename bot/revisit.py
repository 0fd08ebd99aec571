"""Revisit notes, for every surface: the answers the turn runner delivers with sources are kept
(agent/revisit.py), and when a document one of them cited changes, its asker gets one note in
the answer's thread with the question answered again (ASKDESK_REVISIT_NOTIFY).

The new answer runs through the service with the audience the original asker had (the keys
kept with the answer), so a note never shows a source they could not see; it reads and keeps no
thread history. A private answer is never noted (agent/revisit.py lists it as `private`); an
answer whose question was not stored (ASKDESK_STORE_TEXT=false) gets the note alone, asking them
to ask again. Each surface posts through its `RevisitDesk` (bot/slack/revisit.py,
bot/teams/revisit.py), registered on the turn runner when it starts; `askdesk serve` delivers
the pending notes every `EVERY_S` seconds (`keep_noting`), so a note follows within a minute of
the sync that listed it, whichever process ran the sync.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Protocol

from agent.answers import AnswerResult, AskRequest
from agent.prompts import speaking
from agent.revisit import CitedAnswer, Revisit, RevisitLog, open_log

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.turn.service import Askdesk

log = logging.getLogger("askdesk.revisit")

EVERY_S = 30.0


class RevisitDesk(Protocol):
    """One surface's way to post a note in the thread of an answer it delivered."""

    async def note(self, revisit: Revisit, heading: str, answer: AnswerResult | None) -> bool:
        """Post `heading` (and the new `answer`) in the answer's thread; never raises (False: not posted)."""


class Revisits:
    """The turn runner's side: answers with sources are kept; pending notes are delivered."""

    def __init__(self, settings: "Settings") -> None:
        self.settings = settings
        self.desks: dict[str, RevisitDesk] = {}  # by surface name, registered when each starts
        self._log: RevisitLog | None = None

    def log(self) -> RevisitLog:
        if self._log is None:
            self._log = open_log(self.settings)
        return self._log

    def register(self, surface: str, desk: RevisitDesk) -> None:
        self.desks[surface] = desk

    async def cited(self, answer: CitedAnswer) -> None:
        """Keep an answer that cited documents (in a thread: SQLite off the event loop); never raises."""
        if not answer.sources:
            return
        try:
            await asyncio.to_thread(self.log().cite, answer, keep_days=self.settings.revisit_days)
        except Exception as exc:  # housekeeping: the answer is delivered whatever happens here
            log.warning("revisit: the answer %s was not kept (%s)", answer.answer_id, type(exc).__name__)

    async def deliver(self, askdesk: "Askdesk") -> int:
        """Post every pending note a registered surface can post; how many were posted."""
        posted = 0
        for revisit in await asyncio.to_thread(self.log().revisits, status="pending"):
            desk = self.desks.get(revisit.answer.surface)
            if desk is None:  # its surface does not run in this process: left for one that does
                continue
            document = revisit.source.rsplit("/", 1)[-1]
            answer: AnswerResult | None = None
            if revisit.answer.question:
                answer = await askdesk.answer(again(revisit.answer))
            with speaking(getattr(answer, "language", None)):  # the note in the new answer's language
                heading = askdesk.prompts.text("revisit_note" if answer is not None else "revisit_note_ask_again",
                                               document=document)
                ok = await desk.note(revisit, heading, answer)
            status = ("noted" if answer is not None else "noted_without_answer") if ok else "undeliverable"
            await asyncio.to_thread(self.log().mark, revisit.id, status)  # type: ignore[arg-type]
            posted += ok
        return posted

    def close(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None


def again(answer: CitedAnswer) -> AskRequest:
    """The original question, asked as its asker asked it: same surface, collection and audience;
    no thread history read or kept."""
    return AskRequest(text=answer.question or "", surface=answer.surface, thread_id=f"revisit:{answer.answer_id}",
                      user_id=answer.asker, history=[], collection=answer.collection, audience=answer.audience)


def cited_answer(*, answer_id: str, surface: str, thread_id: str, message_id: str | None, asker: str,
                 private: bool, question: str | None, audience: list[str] | None, collection: str | None,
                 result: AnswerResult) -> CitedAnswer:
    return CitedAnswer(answer_id=answer_id, created=time.time(), surface=surface, thread_id=thread_id,
                       message_id=message_id, asker=asker, private=private, question=None if private else question,
                       audience=audience, collection=collection, route=result.route,
                       sources=[r.source for r in result.references])


async def keep_noting(revisits: Revisits, askdesk: "Askdesk", stop: asyncio.Event, every: float = EVERY_S) -> None:
    """Deliver pending notes until `stop` is set (`askdesk serve`, with ASKDESK_REVISIT_NOTIFY)."""
    while not stop.is_set():
        try:
            await revisits.deliver(askdesk)
        except Exception as exc:  # a locked file, a surface's bug: the next round tries again
            log.warning("revisit: notes not delivered: %s: %s", type(exc).__name__, exc)
        try:
            await asyncio.wait_for(stop.wait(), timeout=every)
        except asyncio.TimeoutError:
            pass
