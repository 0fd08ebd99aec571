"""The state-store seam: everything replicas of askdesk must share, behind one protocol.

Conversation memory (Teams, terminal), exactly-once claims on deliveries, per-user rate
limits, feedback, the records feedback is stored with, and who asked in each Teams thread.
Two backends implement it: SQLite (agent/state/sqlite.py, the embedded default, one file in
the data dir) and PostgreSQL (agent/state/postgres.py, `ASKDESK_DATABASE_URL`), plus an
in-process one for evaluation and benchmarks (agent/state/memory.py). One contract test
suite (tests/test_state_contract.py) runs on all three.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from typing import Protocol

from agent.messages import ChatMessage
from agent.state.conversation import Conversation
from agent.state.feedback import Feedback

# Who holds a claim: this process. A claim whose holder is gone (killed mid-turn) and that was
# never settled can be taken by another process; one settled stays until it expires.
OWNER = secrets.randbits(31) or 1
PID = os.getpid()


@dataclass(frozen=True)
class AnswerRecord:
    """What feedback on a delivered answer is stored with (the question only with store_text)."""

    answer_id: str
    route: str
    sources: list[str] = field(default_factory=list)
    question: str | None = None


class StateUnavailable(Exception):
    """The state store cannot be reached (its message is one line, without secrets)."""


class StateStore(Protocol):
    backend: str  # "sqlite" | "postgres" | "memory"

    async def open(self) -> None:
        """Connect and bring the schema up to date (a server does this at start-up)."""

    async def close(self) -> None: ...

    # conversation memory
    async def load(self, surface: str, thread_id: str) -> Conversation: ...

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None: ...

    # exactly once
    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        """True when this process now holds `key`: nobody held it, or its claim expired, or its
        holder died before settling it. Settled claims hold until they expire."""

    async def settle(self, *keys: str) -> None:
        """The work behind these claims is done: no other process may take them over."""

    # rate limits
    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        """Count a question of `user_id`: 0 when within `limit` per `window_s` (and counted),
        else the seconds until the oldest counted one leaves the window (not counted)."""

    # feedback and what it is stored with
    async def add_feedback(self, item: Feedback) -> None: ...

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]: ...

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None: ...

    async def answer_record(self, answer_id: str) -> AnswerRecord | None: ...

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None: ...

    # who asked in a Teams reply chain
    async def remember_asker(self, conversation: str, asker: str) -> None:
        """The bot answered `asker` in `conversation` (the first asker keeps the thread)."""

    async def asker(self, conversation: str) -> str | None: ...
