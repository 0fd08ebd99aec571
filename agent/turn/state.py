"""One turn's state, filled in stage by stage, and the one ledger of its model calls.

Every model call of a turn goes through a `CountedModel`, which writes each attempt behind
the call (failed fallbacks, calls cut off by the deadline) into the turn's `Ledger` exactly
once; `llm_calls` is the ledger's length. Nothing else counts calls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

from agent.answers import AnswerResult, AskRequest
from agent.capabilities.base import Found
from agent.messages import ChatMessage
from agent.providers.base import Completion, Model, PartialFn, ProviderError, Usage
from agent.tracing import NOOP, Span
from agent.turn.answer_stream import AnswerText

if TYPE_CHECKING:
    from agent.capabilities.retrieval import Retrieval
    from agent.understanding.classify import Reading
    from agent.understanding.identity import Identity
    from agent.understanding.route import Route

T = TypeVar("T", bound=BaseModel)

# Surfaces pass this to show tool progress ("Searching the knowledge base…").
ProgressFn = Callable[[str], Awaitable[None]]


class Ledger:
    """Every model call of one turn, as the `Usage` of each attempt, in order."""

    def __init__(self) -> None:
        self.usages: list[Usage] = []

    def record(self, usages: list[Usage]) -> None:
        self.usages.extend(usages)

    def __len__(self) -> int:
        return len(self.usages)


class CountedModel(Model):
    """`model`, with every attempt of every call written to `ledger` (a call the turn's
    deadline cut off counts too: it was made, and may have been billed)."""

    def __init__(self, model: Model, ledger: Ledger) -> None:
        self.model = model
        self.ledger = ledger

    async def complete(self, messages: list[ChatMessage], response_model: type[T]) -> Completion[T]:
        return await self._counted(self.model.complete(messages, response_model))

    async def stream(self, messages: list[ChatMessage], response_model: type[T], *, on_partial: PartialFn,
                     on_interrupt: Callable[[ProviderError, bool], Awaitable[None]] | None = None) -> Completion[T]:
        return await self._counted(self.model.stream(messages, response_model, on_partial=on_partial,
                                                     on_interrupt=on_interrupt))

    async def _counted(self, call: Awaitable[Completion[T]]) -> Completion[T]:
        started = time.perf_counter()
        try:
            completion = await call
        except ProviderError as exc:
            self.ledger.record(exc.attempts or [Usage(provider=exc.provider or "?", model="?", error=str(exc))])
            raise
        except (asyncio.CancelledError, TimeoutError):
            self.ledger.record([Usage(provider="?", model="?", error="cut off by the turn's deadline",
                                      latency_ms=(time.perf_counter() - started) * 1000)])
            raise
        self.ledger.record(completion.attempts)
        return completion


@dataclass
class Turn:
    """Everything one question needs, filled in by the stages (agent/turn/stages.py)."""

    request: AskRequest
    text: str  # the message, stripped
    answer_text: AnswerText  # where the answer streams; what the user has seen so far
    retrieval: "Retrieval"  # the turn's knowledge searches, each run once
    progress: ProgressFn | None = None
    span: Span = NOOP
    history: list[ChatMessage] = field(default_factory=list)
    identity: "Identity | None" = None  # what askdesk says it is about, once a stage needs it
    reading: "Reading | None" = None  # what the wording alone says
    route: "Route | None" = None  # what the turn does: refuse, greet, clarify, or which capability searches what
    found: list[Found] = field(default_factory=list)  # what the route's capability found before the model
    attached: list[Found] = field(default_factory=list)  # the attached files' passages (agent/turn/files.py)
    file_notes: list[str] = field(default_factory=list)  # one line per attached file that could not be used
    result: AnswerResult | None = None
    remember: bool = True  # False: nothing of this turn goes into the conversation history
    ledger: Ledger = field(default_factory=Ledger)
    started: float = field(default_factory=time.perf_counter)
