"""The state-store seam: everything replicas of askdesk must share, as one protocol per role.

`Memory` (conversation memory: Teams, terminal), `Claims` (exactly once on deliveries),
`RateLimits` (per user), `FeedbackLog` (👍/👎 and comments), `AnswerRecords` (what a delivered
answer's buttons act on), `Askers` (who asked in each Teams thread), `TurnLog` (the report's
questions), `Escalations` (questions passed to a person), `Retention` (forgetting by date);
`Lifecycle` is its owner's. A caller takes the narrowest role it uses. A backend declares the
roles it serves by subclassing them: SQLite (agent/state/sqlite.py, the embedded default, one
file in the data dir) and PostgreSQL (agent/state/postgres.py, `ASKDESK_DATABASE_URL`), plus an
in-process one for evaluation and benchmarks (agent/state/memory.py), each every role
(`StateStore`). The contract tests (tests/test_state_contract.py) run per role, on every
backend that serves it.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Literal, Protocol

from pydantic import BaseModel, Field

from agent.messages import ChatMessage
from agent.state.conversation import Conversation
from agent.state.feedback import Feedback

# Who holds a claim: this process. A claim whose holder is gone (killed mid-turn) and that was
# never settled can be taken by another process; one settled stays until it expires.
OWNER = secrets.randbits(31) or 1
PID = os.getpid()


@dataclass(frozen=True)
class AnswerRecord:
    """What feedback on a delivered answer is stored with (the question only with store_text,
    never for a private answer), and who asked it: the one person its buttons act for."""

    answer_id: str
    route: str
    sources: list[str] = field(default_factory=list)
    question: str | None = None
    asker: str | None = None  # the asker's user id on the answer's surface
    private: bool = False  # answered to the asker alone: no comment or escalation is kept for it


Outcome = Literal["answered", "search_only", "unanswerable", "refused", "clarify", "command", "error"]


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class TurnRecord(BaseModel):
    """One answered (or refused) question, for the knowledge-gap report. The question's text is
    kept only with `store_text` (the report then shows examples and groups them by meaning)."""

    created_at: datetime = Field(default_factory=utcnow)
    surface: str
    outcome: Outcome
    route: str | None = None
    answer_id: str | None = None
    question: str | None = None
    sources: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    llm_calls: int = 0
    overridden: bool = False  # a refusal the asker overrode ("Search the documents anyway"): a wrong one


class Citation(BaseModel):
    """A turn whose answer cited `source` (how often a learned answer has answered since it was saved)."""

    source: str
    created_at: datetime
    question: str | None = None


class Escalation(BaseModel):
    """A question passed to a person: where it was asked, where it was posted, and the first
    person's reply (relayed to the asker, and saved as a learned answer when the expert asks)."""

    id: str
    created_at: datetime = Field(default_factory=utcnow)
    surface: str  # where the question was asked
    asker: str
    conversation: str  # the asker's Slack channel or Teams conversation
    thread: str | None = None  # the asker's Slack thread ts
    asker_name: str | None = None  # shown on the other surface, where an id means nothing
    asker_service_url: str | None = None  # a Teams asker's Bot Connector: the relay is proactive
    link: str | None = None  # back to the asker's thread, when the asking surface can build one
    question: str
    attempt: str = ""  # askdesk's answer
    sources: list[str] = Field(default_factory=list)
    target_surface: str  # where it was posted for a person
    target_channel: str
    target_thread: str | None = None  # the escalation's thread (Slack ts, Teams reply chain)
    status: Literal["open", "answered"] = "open"
    expert_id: str | None = None
    expert_name: str | None = None
    expert_answer: str | None = None
    answered_at: datetime | None = None
    saved_as: str | None = None  # the learned answer's file, once saved
    language: str | None = None  # the answer's language: the escalation's notes and posts are said in it


class StateUnavailable(Exception):
    """The state store cannot be reached (its message is one line, without secrets)."""


class Lifecycle(Protocol):
    """Whoever owns a store opens and closes it (the service, a command)."""

    backend: str  # "sqlite" | "postgres" | "memory"

    async def open(self) -> None:
        """Connect and bring the schema up to date (a server does this at start-up)."""

    async def close(self) -> None: ...


class Memory(Protocol):
    """Conversation memory: a thread's history where the surface keeps none (Teams, terminal)."""

    async def load(self, surface: str, thread_id: str) -> Conversation: ...

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None: ...


class Claims(Protocol):
    """Exactly once: which process answers a delivery (a Slack event, a Teams activity) retried
    or seen by several replicas."""

    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        """True when this process now holds `key`: nobody held it, or its claim expired, or its
        holder died before settling it. Settled claims hold until they expire."""

    async def settle(self, *keys: str) -> None:
        """The work behind these claims is done: no other process may take them over."""

    async def abandoned(self, prefix: str) -> list[str]:
        """Unexpired claims starting with `prefix` that were never settled and whose holder is
        gone (killed mid-work): what another process may take over (`claim` grants them) and
        finish, such as closing a Slack stream left open (bot/slack/reply.py)."""


class RateLimits(Protocol):
    """Per-user rate limits, counted across replicas."""

    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        """Count a question of `user_id`: 0 when within `limit` per `window_s` (and counted),
        else the seconds until the oldest counted one leaves the window (not counted)."""


class FeedbackLog(Protocol):
    """👍/👎 on answers, and what a person wrote with them."""

    async def add_feedback(self, item: Feedback) -> None: ...

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]: ...

    async def comment_feedback(self, answer_id: str, user_id: str, comment: str) -> None:
        """Add what the person wrote to their latest feedback on this answer (a 👎's comment box)."""

    async def feedback(self, since: datetime) -> list[Feedback]:
        """Feedback given at or after `since`, oldest first (the knowledge-gap report)."""


class AnswerRecords(Protocol):
    """What a delivered answer's buttons act on: its route, sources, question (with
    store_text), asker and privacy, found by its id or by the message that carried it."""

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None: ...

    async def answer_record(self, answer_id: str) -> AnswerRecord | None: ...

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None: ...


class Askers(Protocol):
    """Who asked in a Teams reply chain (the first asker keeps the thread)."""

    async def remember_asker(self, conversation: str, asker: str) -> None:
        """The bot answered `asker` in `conversation` (the first asker keeps the thread)."""

    async def asker(self, conversation: str) -> str | None: ...


class TurnLog(Protocol):
    """The questions asked and how each ended: the knowledge-gap report's rows."""

    async def record_turn(self, turn: TurnRecord) -> None: ...

    async def turns(self, since: datetime) -> list[TurnRecord]: ...

    async def citations(self, sources: list[str], since: datetime) -> list[Citation]:
        """The turns at or after `since` that cited one of `sources` (one row per source cited),
        oldest first; read in the database (by the `created` index), not by loading every turn."""


class Escalations(Protocol):
    """Questions passed to a person, and the first person's reply."""

    async def save_escalation(self, item: Escalation) -> None:
        """Insert or replace (by id)."""

    async def escalation(self, escalation_id: str) -> Escalation | None: ...

    async def escalation_in_thread(self, channel: str, thread: str) -> Escalation | None: ...

    async def answer_escalation(self, escalation_id: str, *, expert_id: str, expert_name: str | None,
                                text: str) -> Escalation | None:
        """Record a person's reply if it is the first one: the updated escalation, else None
        (already answered: across replicas, exactly one reply is relayed)."""

    async def escalations(self, since: datetime) -> list[Escalation]: ...


class Retention(Protocol):
    """Forgetting what people wrote, by date (`askdesk report --forget-before`, retention_days)."""

    async def forget_before(self, when: datetime) -> dict[str, int]:
        """Delete what people wrote or asked before `when` (conversation messages, turns,
        feedback, escalations): the number of rows of each."""


class ReportSources(TurnLog, FeedbackLog, Escalations, Protocol):
    """What the knowledge-gap report reads (agent/report/)."""


ROLES: tuple[type, ...] = (Memory, Claims, RateLimits, FeedbackLog, AnswerRecords, Askers, TurnLog, Escalations,
                           Retention)


class StateStore(Lifecycle, Memory, Claims, RateLimits, FeedbackLog, AnswerRecords, Askers, TurnLog, Escalations,
                 Retention, Protocol):
    """Every role: what a deployment's store serves (its owner opens, closes and hands out roles)."""
