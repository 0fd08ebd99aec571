"""One turn runner for every surface: validate -> rate-limit -> progress -> answer ->
fallback -> notices -> deliver -> remember.

Every surface (bot/surface.py: Slack, Teams, a plug-in's) and the terminal turn an event into an
`Incoming` and implement `Reply` (how to show progress, stream text, deliver the answer, say a
private note); everything in between happens here, once: the input checks, the per-user rate
limit, the answer id, the "must not raise" fallback, the once-per-thread notice, which answers
offer feedback, "Ask a person" and "Search the documents anyway" (`Delivery`), the answer records
feedback is stored with and buttons are checked against (bot/permissions.py). Whether a question
is answered privately is decided here too (`TurnRunner.privacy`), before the surface picks how
to deliver it. A private question (`Incoming.private`) leaves no text in any store: not its
question, answer or a comment on it, whatever `store_text` says, and offers nothing that would
pass it on. Registry commands (slash commands) run through the service here too, and feedback is
recorded here whatever surface it came from.
"""

from __future__ import annotations

import asyncio

import logging
import uuid
from collections.abc import Awaitable, Callable
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from agent.audience import viewer_keys
from agent.answers import AnswerResult, AskRequest, Attachment, Confirmation, Surface
from agent.capabilities.base import CommandResult
from agent.messages import ChatMessage
from agent.prompts import LANGUAGE, speaking
from agent.state.base import Outcome, TurnRecord
from agent.state.feedback import Feedback
from bot.dedupe import Deliveries
from bot.escalation import EscalationDesks, Target, reachable_target
from bot.permissions import offers_escalation
from bot.private import asked_privately
from bot.rate_limit import RateLimiter
from bot.records import AnswerRecord, AnswerRecords
from bot.revisit import Revisits, cited_answer

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
    confirmation: Confirmation | None = None  # the asker's Confirm / Cancel of a proposed action (bot/confirm.py)
    # where the answer is shown, for the knowledge sources' audiences: the channel's id (None: a
    # DM, a personal chat) and the asker's email, looked up only when their own audience counts
    channel: str | None = None
    load_email: Callable[[], Awaitable[str | None]] | None = None


async def audience_of(incoming: Incoming, people: Callable[[], bool] = lambda: True) -> list[str] | None:
    """The keys the knowledge sources' audiences may name for this answer (agent/audience.py):
    in a channel the channel's, in a DM or a private answer the asker's (id, email, domain).
    The terminal is the deployment's own operator: unrestricted. The email is looked up only
    when `people()` says some source's audience names people by email or domain."""
    if incoming.surface == "cli":
        return None
    email = None
    if (incoming.private or not incoming.channel) and incoming.load_email is not None and people():
        try:
            email = await incoming.load_email()
        except Exception as exc:  # no email: the asker still sees what their id and everyone may
            log.warning("%s: the asker's email was not read (%s)", incoming.surface, type(exc).__name__)
    return sorted(viewer_keys(channel=incoming.channel, user=incoming.user_id, email=email,
                              private=incoming.private))


@dataclass(frozen=True)
class Privacy:
    """How one question is answered, decided once for every surface (`TurnRunner.privacy`)."""

    text: str  # the question without a leading private word
    private: bool  # only the asker sees the answer: the surface sends it ephemeral, targeted...
    asked: bool  # it started with the private word: even in a one-to-one chat, kept nowhere

    @property
    def stored(self) -> bool:
        """Whether the question may be remembered and passed on (`Incoming.private` is its opposite)."""
        return not (self.private or self.asked)


@dataclass
class Delivery:
    """What a surface delivers: the answer, its id, the notice to show with it (once per
    thread), whether to offer feedback, and the buttons it offers: "Ask a person" (an
    unanswerable answer, an escalation channel reachable from here) and "Search the documents
    anyway" (a refusal). A private answer offers neither: nothing of it may be passed on."""

    result: AnswerResult
    answer_id: str
    notice: str | None
    feedback: bool
    ask_a_person: bool = False
    search_anyway: bool = False


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

    def __init__(self, askdesk: "Askdesk", *, rate_limit: bool = True,
                 surfaces: Mapping[str, Any] | None = None) -> None:
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
        # each running surface registers its desk; `surfaces`: the registered ones (plug-ins')
        self.escalation_desks = EscalationDesks(surfaces)
        # answers with sources, revisited when a cited document changes (each surface registers its desk)
        self.revisits = Revisits(settings)

    def privacy(self, text: str, *, channel: str | None) -> Privacy:
        """Whether a question is answered to the asker alone: in a channel or group chat (`channel`;
        None: a one-to-one chat, private already) whose answer mode is `private`, or when it starts
        with the private word (bot/private.py), which is taken off."""
        settings = self.askdesk.settings
        text, asked = asked_privately(text, settings.private_word)
        private = channel is not None and (asked or settings.answer_mode_for(channel) == "private")
        return Privacy(text=text, private=private, asked=asked)

    def answers_follow_ups(self, channel: str) -> bool:
        """Whether a thread in `channel` may be followed up without a new mention: only where its
        answer mode is `thread` (a `mentions` channel answers mentions only; a `private` one has no
        public thread to follow)."""
        return self.askdesk.settings.answer_mode_for(channel) == "thread"

    def escalation_target(self, surface: str) -> Target | None:
        """Where "Ask a person" passes a question asked on `surface`, when reachable from this
        process (bot/escalation.py); None: no such button."""
        return reachable_target(self.askdesk.settings, surface, self.escalation_desks)

    def offers_escalation(self, surface: str, record: AnswerRecord | None, presser: str | None) -> bool:
        """Whether the thanks for `presser`'s 👎 offers "Ask a person": a target is reachable and
        they may press it (bot/permissions.py)."""
        return (self.escalation_target(surface) is not None
                and offers_escalation(self.askdesk.settings, record, presser))

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
        process is stopping (another replica may then answer Slack's retry). Notes before the
        answer are said in the message's language, the answer's fixed texts in the turn's."""
        with speaking(self.askdesk.language_of(incoming.text)):
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
                             search_anyway=incoming.search_anyway, confirmation=incoming.confirmation,
                             audience=await audience_of(incoming, self.askdesk.audiences_name_people))
        try:
            result = await self.askdesk.answer(request, progress=reply.progress,
                                               on_text=reply.text if reply.streams else None)
        except asyncio.CancelledError:  # the process stops past its grace period: say so, then stop
            await last_word(reply, self.prompts.render("shutdown_interrupted"), incoming.surface)
            raise
        except Exception as exc:  # answer() promises not to raise; a bug must still not leave the user hanging
            log.error("%s: answer failed (reference %s): %s", incoming.surface, answer_id, type(exc).__name__)
            result = AnswerResult(answer=self.prompts.render("internal_error", ref=answer_id), route="knowledge",
                                  language=LANGUAGE.get())
        LANGUAGE.set(result.language)  # buttons, headings and notes in the answer's language (until `run` ends)
        feedback = result.route in self.feedback_routes
        passed_on = not incoming.private  # a private question offers nothing that would pass it on
        delivery = Delivery(
            result=result, answer_id=answer_id, notice=await self._notice(incoming, result), feedback=feedback,
            ask_a_person=passed_on and feedback and result.unanswerable
            and self.escalation_target(incoming.surface) is not None,
            search_anyway=passed_on and result.route == "offtopic" and not incoming.search_anyway)
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
        if delivery.feedback or result.route == "offtopic":  # what its buttons are checked against
            await self.records.remember(AnswerRecord(
                answer_id=answer_id, route=result.route, sources=[r.source for r in result.references],
                question=None if incoming.private or not delivery.feedback else incoming.text,
                asker=incoming.user_id, private=incoming.private),
                conversation=incoming.thread_id, message_id=message_id)
        if delivery.feedback and result.references and incoming.surface != "cli":  # the terminal: no thread to note
            await self.revisits.cited(cited_answer(
                answer_id=answer_id, surface=incoming.surface, thread_id=incoming.thread_id, message_id=message_id,
                asker=incoming.user_id, private=incoming.private,
                question=incoming.text if self.store_text and not incoming.private else None,
                audience=request.audience, collection=incoming.collection, result=result))
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
                              comment: str | None = None) -> AnswerRecord | None:
        """Store a 👍/👎: the answer found by its id (Slack's button carries it) or by the rated
        message in its conversation (Teams sends only that); what the button carries fills in
        for an answer this process no longer remembers. A comment is kept only with an answer
        known not to be private (a private answer keeps no text anywhere). Returns the answer's
        record, if found."""
        record = await self.records.get(answer_id) if answer_id else await self.records.by_message(thread, message_id)
        await self.state.add_feedback(Feedback(
            rating=rating, user_id=user_id, surface=surface, channel=channel, thread=thread,
            answer_id=record.answer_id if record else (answer_id or message_id),
            route=record.route if record else route,
            sources=list(record.sources) if record else list(sources or []),
            question=record.question if record and self.store_text and not record.private else None,
            comment=(comment or None) if record is not None and not record.private else None,
        ))
        return record

    async def comment_feedback(self, *, answer_id: str, user_id: str, comment: str) -> None:
        """What the person wrote after their 👎 (Slack's comment box), added to that feedback;
        dropped for a private answer, or one whose record is gone (it may have been private)."""
        record = await self.records.get(answer_id)
        if record is None or record.private:
            return
        await self.state.comment_feedback(answer_id, user_id, comment)
