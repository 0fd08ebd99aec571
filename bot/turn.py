"""One turn runner for every surface: validate -> rate-limit -> progress -> answer ->
fallback -> notices -> deliver -> remember.

Slack, Teams and the terminal each turn an event into an `Incoming` and implement `Reply`
(how to show progress, stream text, deliver the answer, say a private note); everything in
between happens here, once: the input checks, the per-user rate limit, the answer id, the
"must not raise" fallback, the once-per-thread notice, which answers offer feedback, the
answer records feedback is stored with. Registry commands (slash commands) run through the
service here too, and feedback is recorded here whatever surface it came from.
"""

from __future__ import annotations

import asyncio

import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from agent.answers import AnswerResult, AskRequest, Attachment, Surface
from agent.capabilities.base import CommandResult
from agent.messages import ChatMessage
from agent.state.base import Outcome, TurnRecord
from agent.state.feedback import Feedback
from bot.dedupe import Deliveries
from bot.escalation import EscalationDesks
from bot.rate_limit import RateLimiter
from bot.records import AnswerRecord, AnswerRecords

if TYPE_CHECKING:
    from agent.turn.service import Askdesk

log = logging.getLogger("askdesk.turn")

NOTICE_TTL_S = 7 * 24 * 3600  # the "no model configured" notice: once per thread per week
TURN_ROUTES_WITHOUT_FEEDBACK = {"offtopic", "smalltalk"}  # fixed texts: nothing to rate


def new_id() -> str:
    return uuid.uuid4().hex[:12]


def outcome_of(result: AnswerResult) -> Outcome:
    """How a delivered answer counts in the knowledge-gap report."""
    if result.route == "offtopic":
        return "refused"
    if result.route in ("clarify", "smalltalk"):
        return "clarify"
    if result.unanswerable:
        return "unanswerable"
    return "search_only" if result.search_only else "answered"


@dataclass
class Incoming:
    """A question as every surface hands it over."""

    surface: Surface
    text: str
    thread_id: str  # the conversation: Slack channel:thread_ts, Teams conversation id, terminal session
    user_id: str
    history: list[ChatMessage] | None = None  # given by surfaces that own their history (Slack threads)
    # ...or fetched once the asker sees progress (a Slack thread is read from the Web API)
    load_history: Callable[[], Awaitable[list[ChatMessage]]] | None = None
    collection: str | None = None  # knowledge collection override (a Slack channel's)
    notice_shown: Callable[[str], bool] | None = None  # the thread already shows this notice (Slack)
    claims: tuple[str, ...] = ()  # delivery claims settled once the turn is over (bot/dedupe.py)
    private: bool = False  # only the asker sees the answer: never stored in the thread's history
    # the files that came with the question, fetched once the asker sees progress (None: no files)
    load_attachments: Callable[[], Awaitable[list[Attachment]]] | None = None
    search_anyway: bool = False  # the asker overrode a refusal ("Search the documents anyway")


@dataclass
class Delivery:
    """What a surface delivers: the answer, its id, the notice to show with it (once per
    thread) and whether to offer feedback."""

    result: AnswerResult
    answer_id: str
    notice: str | None
    feedback: bool


class Reply(Protocol):
    """What a surface implements for one question."""

    streams: bool  # takes the answer text as the model writes it (False: the whole answer at the end)

    async def progress(self, step: str) -> None:
        """A status line ("Searching the knowledge base…"); never raises."""

    async def text(self, delta: str) -> None:
        """The answer as the model writes it (streamed where the conversation allows)."""

    async def finish(self, delivery: Delivery) -> str | None:
        """Deliver the answer; returns the delivered message's id. Raises when delivery failed."""

    async def note(self, text: str) -> None:
        """A short note only the asker sees (a rejected message, the rate limit); never raises."""

    async def apologise(self, text: str) -> None:
        """Delivery failed: replace what was shown with `text`, best effort (may raise)."""


async def last_word(reply: "Reply", text: str, surface: str, timeout: float = 3.0) -> None:
    """Close what the user sees of a turn that is being cancelled (best effort, bounded)."""
    try:
        await asyncio.wait_for(reply.apologise(text), timeout)
    except (Exception, asyncio.CancelledError) as exc:
        log.warning("%s: the interrupted answer could not be closed: %s", surface, type(exc).__name__)


class TurnRunner:
    """The flow around `Askdesk.answer` that every surface shares; what it keeps (claims, rate
    limits, answer records, feedback) lives in the service's state store, shared by replicas."""

    def __init__(self, askdesk: "Askdesk", *, rate_limit: bool = True) -> None:
        settings = askdesk.settings
        self.askdesk = askdesk
        self.prompts = askdesk.prompts
        self.state = askdesk.state
        self.deliveries = Deliveries(self.state)
        # the terminal's one local user is not rate limited; chat surfaces share one limit per user
        self.limiter = RateLimiter(self.state, settings.rate_limit_per_minute if rate_limit else 0)
        self.records = AnswerRecords(self.state, store_text=settings.store_text)
        self.store_text = settings.store_text
        self.feedback_routes = {*askdesk.capabilities().names, "clarify"}
        self.escalation_desks = EscalationDesks()  # each running surface registers its own

    async def check(self, incoming: Incoming) -> str | None:
        """Why this message gets a note instead of an answer (empty, too long, too fast), else None."""
        problem = self.askdesk.input_problem(incoming.text, files=incoming.load_attachments is not None)
        if problem is not None:
            return problem
        wait = await self.limiter.check(incoming.user_id)
        return self.prompts.render("rate_limited", seconds=int(wait)) if wait else None

    async def run(self, incoming: Incoming, reply: Reply) -> Delivery | None:
        """Answer `incoming` through `reply`; None when it got a note instead or was not delivered.
        The delivery's claims are settled when the turn is over, whatever its outcome, unless the
        process is stopping (another replica may then answer Slack's retry)."""
        delivery = await self._run(incoming, reply)
        if incoming.claims:
            await self.deliveries.settle(*incoming.claims)
        return delivery

    async def _run(self, incoming: Incoming, reply: Reply) -> Delivery | None:
        if (problem := await self.check(incoming)) is not None:
            await reply.note(problem)
            return None
        await reply.progress(self.prompts.render("thinking"))  # instant feedback
        answer_id = new_id()
        history = incoming.history
        if incoming.load_history is not None:
            history = await incoming.load_history()
        attachments = await incoming.load_attachments() if incoming.load_attachments is not None else []
        request = AskRequest(text=incoming.text, surface=incoming.surface, thread_id=incoming.thread_id,
                             user_id=incoming.user_id, history=history, collection=incoming.collection,
                             attachments=attachments, private=incoming.private,
                             search_anyway=incoming.search_anyway)
        try:
            result = await self.askdesk.answer(request, progress=reply.progress,
                                               on_text=reply.text if reply.streams else None)
        except asyncio.CancelledError:  # the process stops past its grace period: say so, then stop
            await last_word(reply, self.prompts.render("shutdown_interrupted"), incoming.surface)
            raise
        except Exception as exc:  # answer() promises not to raise; a bug must still not leave the user hanging
            log.error("%s: answer failed (reference %s): %s", incoming.surface, answer_id, type(exc).__name__)
            result = AnswerResult(answer=self.prompts.render("internal_error", ref=answer_id), route="knowledge")
        delivery = Delivery(result=result, answer_id=answer_id, notice=await self._notice(incoming, result),
                            feedback=result.route in self.feedback_routes)
        try:
            message_id = await reply.finish(delivery)
        except Exception as exc:
            log.error("%s: delivering the answer failed (reference %s): %s", incoming.surface, answer_id,
                      type(exc).__name__)
            try:
                await reply.apologise(self.prompts.render("delivery_error", ref=answer_id))
            except Exception as again:
                log.error("%s: the apology was not delivered either (reference %s): %s", incoming.surface,
                          answer_id, type(again).__name__)
            return None
        await self.state.record_turn(TurnRecord(
            surface=incoming.surface, outcome=outcome_of(result), route=result.route, answer_id=answer_id,
            # text only where it helps close a gap (and only with store_text): escalated and
            # down-voted questions keep theirs with the escalation and the feedback record
            question=incoming.text if self.store_text and not incoming.private
            and outcome_of(result) == "unanswerable" else None,
            sources=[r.source for r in result.references],
            latency_ms=result.latency_ms, llm_calls=result.llm_calls, overridden=incoming.search_anyway))
        if delivery.feedback:
            await self.records.remember(AnswerRecord(
                answer_id=answer_id, route=result.route, sources=[r.source for r in result.references],
                question=incoming.text), conversation=incoming.thread_id, message_id=message_id)
        return delivery

    async def _notice(self, incoming: Incoming, result: AnswerResult) -> str | None:
        """The result's notice, the first time in this thread only (across restarts where the
        surface can tell that the thread already shows it)."""
        if not result.notice:
            return None
        if incoming.notice_shown is not None and incoming.notice_shown(result.notice):
            return None
        first = await self.deliveries.first_time(f"notice:{incoming.thread_id}", ttl_s=NOTICE_TTL_S)
        return result.notice if first else None

    # ----------------------------------------------------------------- commands
    async def command(self, name: str, text: str) -> CommandResult:
        """A capability's command through the service; raises for a failure the surface reports."""
        result, _ = await self.askdesk.command(name, text)
        return result

    # ----------------------------------------------------------------- feedback
    async def record_feedback(self, *, rating: str, user_id: str, surface: Surface, channel: str | None,
                              thread: str | None, answer_id: str | None = None, message_id: str | None = None,
                              route: str | None = None, sources: list[str] | None = None,
                              comment: str | None = None) -> None:
        """Store a 👍/👎: the answer found by its id (Slack's button carries it) or by the rated
        message in its conversation (Teams sends only that); what the button carries fills in
        for an answer this process no longer remembers."""
        record = await self.records.get(answer_id) if answer_id else await self.records.by_message(thread, message_id)
        await self.state.add_feedback(Feedback(
            rating=rating, user_id=user_id, surface=surface, channel=channel, thread=thread,
            answer_id=record.answer_id if record else (answer_id or message_id),
            route=record.route if record else route,
            sources=list(record.sources) if record else list(sources or []),
            question=record.question if record and self.store_text else None,
            comment=comment or None,
        ))

    async def comment_feedback(self, *, answer_id: str, user_id: str, comment: str) -> None:
        """What the person wrote after their 👎 (Slack's comment box), added to that feedback."""
        await self.state.comment_feedback(answer_id, user_id, comment)
