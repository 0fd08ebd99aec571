"""The state store as turns use it: a failure of the database never reaches the user.

When the store fails mid-turn (PostgreSQL restarting, a full disk) the turn goes on without
it: a claim is granted (better a rare duplicate than a lost question), the rate limit lets
the question through, history reads empty, records and feedback are not kept. The outage is
logged once, as one line without a traceback, and its end once more.
"""

from __future__ import annotations

from datetime import datetime
import logging
from collections.abc import Awaitable
from typing import TypeVar

from agent.messages import ChatMessage
from agent.state.base import AnswerRecord, Citation, Escalation, StateStore, TurnRecord
from agent.state.conversation import Conversation
from agent.state.feedback import Feedback

log = logging.getLogger("askdesk.state")

T = TypeVar("T")


class Guarded(StateStore):
    """Every role of `inner`, each failure of a turn's call turned into its fallback."""

    def __init__(self, inner: StateStore) -> None:
        self.inner = inner
        self.backend = inner.backend
        self.down = False

    async def _safe(self, what: str, work: Awaitable[T], fallback: T) -> T:
        try:
            result = await work
        except Exception as exc:
            if not self.down:
                self.down = True
                log.warning("state store (%s) unavailable while %s: %s: %s; answering without it until it is back",
                            self.backend, what, type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
            return fallback
        if self.down and getattr(self.inner, "reached", True):  # a call that never reached it proves nothing
            self.down = False
            log.warning("state store (%s) is back", self.backend)
        return result

    async def open(self) -> None:
        await self.inner.open()  # at start-up a failure must stop the server: not guarded

    async def close(self) -> None:
        await self._safe("closing", self.inner.close(), None)

    async def load(self, surface: str, thread_id: str) -> Conversation:
        return await self._safe("reading a conversation", self.inner.load(surface, thread_id),
                                Conversation(surface, thread_id, []))

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        await self._safe("saving a conversation", self.inner.append(surface, thread_id, messages), None)

    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        return await self._safe("claiming a delivery", self.inner.claim(key, ttl_s, settled=settled), True)

    async def settle(self, *keys: str) -> None:
        await self._safe("settling a delivery", self.inner.settle(*keys), None)

    async def abandoned(self, prefix: str) -> list[str]:
        return await self._safe("reading abandoned claims", self.inner.abandoned(prefix), [])

    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        return await self._safe("counting a question", self.inner.rate_hit(user_id, limit, window_s), 0.0)

    async def add_feedback(self, item: Feedback) -> None:
        await self._safe("saving feedback", self.inner.add_feedback(item), None)

    async def comment_feedback(self, answer_id: str, user_id: str, comment: str) -> None:
        await self._safe("saving a feedback comment", self.inner.comment_feedback(answer_id, user_id, comment), None)

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]:
        return await self._safe("reading feedback", self.inner.recent_feedback(limit), [])

    async def feedback(self, since: datetime) -> list[Feedback]:
        return await self.inner.feedback(since)  # the report says when it cannot read them

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None:
        await self._safe("saving an answer record", self.inner.remember_answer(
            record, conversation=conversation, message_id=message_id), None)

    async def answer_record(self, answer_id: str) -> AnswerRecord | None:
        return await self._safe("reading an answer record", self.inner.answer_record(answer_id), None)

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None:
        return await self._safe("reading an answer record", self.inner.answer_by_message(conversation, message_id),
                                None)

    async def remember_asker(self, conversation: str, asker: str) -> None:
        await self._safe("saving a thread's asker", self.inner.remember_asker(conversation, asker), None)

    async def asker(self, conversation: str) -> str | None:
        return await self._safe("reading a thread's asker", self.inner.asker(conversation), None)

    async def record_turn(self, turn: TurnRecord) -> None:
        await self._safe("recording a turn", self.inner.record_turn(turn), None)

    async def turns(self, since: datetime) -> list[TurnRecord]:
        return await self.inner.turns(since)  # the report says when it cannot read them

    async def citations(self, sources: list[str], since: datetime) -> list[Citation]:
        return await self.inner.citations(sources, since)  # the console says when it cannot read them

    async def save_escalation(self, item: Escalation) -> None:
        await self.inner.save_escalation(item)  # the caller tells the asker it was not passed on

    async def escalation(self, escalation_id: str) -> Escalation | None:
        return await self._safe("reading an escalation", self.inner.escalation(escalation_id), None)

    async def escalation_in_thread(self, channel: str, thread: str) -> Escalation | None:
        return await self._safe("reading an escalation", self.inner.escalation_in_thread(channel, thread), None)

    async def answer_escalation(self, escalation_id: str, *, expert_id: str, expert_name: str | None,
                                text: str) -> Escalation | None:
        return await self._safe("recording a reply", self.inner.answer_escalation(
            escalation_id, expert_id=expert_id, expert_name=expert_name, text=text), None)

    async def escalations(self, since: datetime) -> list[Escalation]:
        return await self.inner.escalations(since)

    async def forget_before(self, when: datetime) -> dict[str, int]:
        return await self.inner.forget_before(when)  # the command reports a failure itself
