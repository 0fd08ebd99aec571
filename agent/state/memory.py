"""The state store in process memory: evaluation and benchmarks keep nothing on disk.

Same contract as the SQLite and PostgreSQL backends (tests/test_state_contract.py), for one
process; bounded like every per-process cache (bot/cache.py)."""

from __future__ import annotations

from datetime import datetime
import time
from collections import deque

from cachetools import LRUCache, TTLCache

from agent.messages import ChatMessage
from agent.state.base import AnswerRecord, Citation, Escalation, StateStore, TurnRecord, utcnow
from agent.state.conversation import Conversation, conversation_key
from agent.state.feedback import Feedback

KEPT = 50_000


class MemoryState(StateStore):
    """Every role (agent/state/base.py), for one process."""

    backend = "memory"

    def __init__(self, *, max_messages: int = 50) -> None:
        self.max_messages = max_messages
        self._messages: LRUCache = LRUCache(KEPT)
        self._claims: dict[str, tuple[float, bool]] = {}  # key -> (expires, settled)
        self._hits: dict[str, deque[float]] = {}
        self._feedback: deque[Feedback] = deque(maxlen=KEPT)
        self._records: LRUCache = LRUCache(KEPT)
        self._by_message: LRUCache = LRUCache(KEPT)
        self._askers: TTLCache = TTLCache(KEPT, ttl=30 * 24 * 3600)
        self._turns: deque[TurnRecord] = deque(maxlen=KEPT)
        self._escalations: dict[str, Escalation] = {}

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    async def load(self, surface: str, thread_id: str) -> Conversation:
        kept = self._messages.get(conversation_key(surface, thread_id), [])
        return Conversation(surface, thread_id, list(kept[-self.max_messages:]))

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        key = conversation_key(surface, thread_id)
        self._messages[key] = [*self._messages.get(key, []), *messages][-self.max_messages:]

    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        now = time.monotonic()
        if len(self._claims) > KEPT:
            self._claims = {k: v for k, v in self._claims.items() if v[0] > now}
        held = self._claims.get(key)
        if held is not None and held[0] > now:
            return False  # one process: a holder that is not settled is still at work
        self._claims[key] = (now + ttl_s, settled)
        return True

    async def settle(self, *keys: str) -> None:
        for key in keys:
            if key in self._claims:
                self._claims[key] = (self._claims[key][0], True)

    async def abandoned(self, prefix: str) -> list[str]:
        return []  # one process: a holder that is gone took this store with it

    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        now = time.monotonic()
        hits = self._hits.setdefault(user_id, deque())
        while hits and now - hits[0] >= window_s:
            hits.popleft()
        if len(hits) >= limit:
            return hits[0] + window_s - now
        hits.append(now)
        if len(self._hits) > KEPT:
            self._hits = {u: h for u, h in self._hits.items() if h and now - h[-1] < window_s}
        return 0.0

    async def add_feedback(self, item: Feedback) -> None:
        self._feedback.append(item)

    async def comment_feedback(self, answer_id: str, user_id: str, comment: str) -> None:
        for item in reversed(self._feedback):
            if item.answer_id == answer_id and item.user_id == user_id:
                item.comment = comment
                return

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]:
        return list(reversed(self._feedback))[:limit]

    async def feedback(self, since: datetime) -> list[Feedback]:
        return [f for f in self._feedback if f.created_at >= since]

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None:
        self._records[record.answer_id] = record
        if conversation and message_id:
            self._by_message[(conversation, message_id)] = record.answer_id

    async def answer_record(self, answer_id: str) -> AnswerRecord | None:
        return self._records.get(answer_id)

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None:
        answer_id = self._by_message.get((conversation, message_id))
        return self._records.get(answer_id) if answer_id else None

    async def remember_asker(self, conversation: str, asker: str) -> None:
        self._askers.setdefault(conversation, asker)

    async def asker(self, conversation: str) -> str | None:
        return self._askers.get(conversation)

    async def record_turn(self, turn: TurnRecord) -> None:
        self._turns.append(turn)

    async def turns(self, since: datetime) -> list[TurnRecord]:
        return [t for t in self._turns if t.created_at >= since]

    async def citations(self, sources: list[str], since: datetime) -> list[Citation]:
        wanted = set(sources)
        found = [Citation(source=s, created_at=t.created_at, question=t.question)
                 for t in self._turns if t.created_at >= since for s in t.sources if s in wanted]
        return sorted(found, key=lambda c: c.created_at)

    async def save_escalation(self, item: Escalation) -> None:
        self._escalations[item.id] = item.model_copy()

    async def escalation(self, escalation_id: str) -> Escalation | None:
        found = self._escalations.get(escalation_id)
        return found.model_copy() if found else None

    async def escalation_in_thread(self, channel: str, thread: str) -> Escalation | None:
        return next((e.model_copy() for e in self._escalations.values()
                     if e.target_channel == channel and e.target_thread == thread), None)

    async def answer_escalation(self, escalation_id: str, *, expert_id: str, expert_name: str | None,
                                text: str) -> Escalation | None:
        found = self._escalations.get(escalation_id)
        if found is None or found.status != "open":
            return None
        found = found.model_copy(update={"status": "answered", "expert_id": expert_id, "expert_name": expert_name,
                                         "expert_answer": text, "answered_at": utcnow()})
        self._escalations[escalation_id] = found
        return found.model_copy()

    async def escalations(self, since: datetime) -> list[Escalation]:
        return sorted((e.model_copy() for e in self._escalations.values() if e.created_at >= since),
                      key=lambda e: e.created_at)

    async def forget_before(self, when: datetime) -> dict[str, int]:
        turns = [t for t in self._turns if t.created_at >= when]
        feedback = [f for f in self._feedback if f.created_at >= when]
        old = [k for k, e in self._escalations.items() if e.created_at < when]
        counts = {"messages": 0, "turns": len(self._turns) - len(turns), "feedback": len(self._feedback) - len(feedback),
                  "escalations": len(old)}
        self._turns = deque(turns, maxlen=KEPT)
        self._feedback = deque(feedback, maxlen=KEPT)
        for key in old:
            del self._escalations[key]
        return counts
