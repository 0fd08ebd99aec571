"""The one entry point every surface calls: a question in, an answer with sources out.

`Askdesk.answer` runs the turn's stages (agent/turn/stages.py: check -> recall -> read ->
classify -> retrieve -> respond) within ASKDESK_TURN_TIMEOUT (agent/deadline.py), then
remembers the turn and ends its trace. It never raises: when the models fail or run out of
time the user gets the search results with a note (agent/turn/degrade.py), and only when the
search fails too an apology with a reference id, the log the details. `command` runs a
capability's command (a registry's `/NAME text`) for every surface, `route` classifies a
message without answering (evaluation). Surfaces never talk to capabilities, the router or
providers directly.
"""

from __future__ import annotations

import logging
import time
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agent.audience import viewing
from agent.answers import AnswerResult, AskRequest, FileProblem, Surface
from agent.capabilities.base import Capabilities, Command, CommandResult
from agent.capabilities.loader import load_capabilities
from agent.config import Settings
from agent.deadline import deadline, reserve
from agent.messages import ChatMessage
from agent.knowledge.language import message_language, turn_language
from agent.prompts import PromptSet, default_prompts, load_prompts, speaking
from agent.providers.chain import ModelChain
from agent.providers.models import ServiceModels, make_models
from agent.runtime import Runtime
from agent.state import StateStore, open_state
from agent.tracing import NOOP, Tracer
from agent.turn.answer_stream import AnswerText, TextFn
from agent.turn.context import TurnContext
from agent.turn.degrade import apology
from agent.turn.context import ThreadFiles
from agent.turn.files import file_problem
from agent.capabilities.retrieval import Retrieval
from agent.turn.stages import CONFIRMED, STAGES, Stage, classify, input_problem, read, recall
from agent.turn.state import CountedModel, Ledger, ProgressFn, Turn
from agent.understanding.domain import domain_path, load_domain
from agent.understanding.identity import Identities
from agent.understanding.route import Route

if TYPE_CHECKING:
    from agent.clock import Clock
    from agent.learned import LearnedAnswer, Owner

__all__ = ["AnswerResult", "AskRequest", "Askdesk", "ProgressFn", "ServiceModels", "Surface", "make_models"]

log = logging.getLogger("askdesk.service")


class Askdesk:
    """The turn's stages over the deployment's capabilities, with memory, tracing and a deadline."""

    def __init__(self, settings: Settings, runtime: Runtime, *, prompts: PromptSet | None = None,
                 state: StateStore | None = None, models: ServiceModels | None = None,
                 tracer: Tracer | None = None, owns_runtime: bool = False,
                 stages: tuple[Stage, ...] = STAGES, clock: "Clock | None" = None) -> None:
        from agent.knowledge.learned import LearnedAnswers

        self.settings = settings
        self.runtime = runtime
        if prompts is None:
            prompts = load_prompts(settings.prompts_dir) if settings.prompts_dir else default_prompts()
        self.prompts = prompts
        self.state = state if state is not None else open_state(settings)  # memory, claims, limits, feedback
        self.models = models if models is not None else make_models(settings, self.prompts)
        self.tracer = tracer or Tracer(redact_text=settings.trace_redact)
        self.stages = stages
        self._owns_runtime = owns_runtime
        self.domain = load_domain(domain_path(settings))  # a broken domain file fails at start-up
        self.identity = Identities(settings, self.domain, runtime, self.prompts)  # what askdesk says it is about
        # every capability plug-in's, askdesk's knowledge base and registries included (a broken
        # registry declaration fails here)
        self.deployed = load_capabilities(runtime, settings)
        self.registries = self.deployed.registries()
        self._contexts: dict[str | None, TurnContext] = {}
        self.files = ThreadFiles()  # each thread's attached files, for its follow-ups (never ingested)
        self.ready = True  # False from `starting()` until `warm_up()` has run (a server's /healthz)
        # saved expert answers and their review dates, on one clock (tests move it forward)
        self.learned_answers = LearnedAnswers(runtime, settings.learned_path, review_days=settings.learned_review_days,
                                              remind_days=settings.learned_remind_days, clock=clock)

    @classmethod
    def create(cls, settings: Settings, runtime: Runtime | None = None, **kwargs: Any) -> Askdesk:
        """Validate prompts, models and declarations at start-up (a broken one fails here, not mid-turn)."""
        if runtime is None:
            return cls(settings, Runtime.open(settings), owns_runtime=True, **kwargs)
        return cls(settings, runtime, **kwargs)

    async def close(self) -> None:
        await self.state.close()
        self.tracer.close()
        for model in {id(m): m for m in (self.models.router, self.models.agent) if m is not None}.values():
            if isinstance(model, ModelChain):
                await model.aclose()
        if self._owns_runtime:
            await self.runtime.close()

    @property
    def search_only(self) -> bool:
        return self.models.agent is None

    def context(self, collection: str | None = None) -> TurnContext:
        """Everything turns on `collection` share (capabilities, classifier, tools), built once."""
        if collection not in self._contexts:
            self._contexts[collection] = TurnContext.build(
                settings=self.settings, runtime=self.runtime, prompts=self.prompts, models=self.models,
                memory=self.state, identities=self.identity, domain=self.domain, collection=collection,
                capabilities=list(self.deployed), files=self.files)
        return self._contexts[collection]

    def starting(self) -> None:
        """A server is up but not warmed: its health check says "starting" until `warm_up` ends."""
        self.ready = False

    async def warm_up(self, collection: str | None = None) -> dict[str, float]:
        """Load everything a first question needs (the embedder, the knowledge base's statistics
        and calibration, each registry's places, what askdesk says it is about) and return the
        seconds each took; `askdesk serve` reports ready only after this. A part that cannot
        load (the store is down) is logged and left to load on first use."""
        ctx = self.context(collection)
        took: dict[str, float] = {}
        steps = [(c.name, c.warm) for c in ctx.capabilities]
        steps += [("calibration", ctx.classifier.prepare), ("identity", lambda: self.identity.load(collection))]
        for name, step in steps:
            started = time.perf_counter()
            try:
                await step()
            except Exception as exc:
                log.warning("warm-up of %s failed (%s): it loads on first use", name, type(exc).__name__)
            took[name] = time.perf_counter() - started
        self.ready = True
        return took

    def audiences_name_people(self) -> bool:
        """Some knowledge source is limited to people by email or domain (agent/audience.py)."""
        from agent.sources.config import audiences_name_people

        return audiences_name_people(self.settings)

    def capabilities(self, collection: str | None = None) -> Capabilities:
        return self.context(collection).capabilities

    def input_problem(self, text: str, *, files: bool = False) -> str | None:
        """The note for an empty (without `files`) or too long message, else None (Slack asks
        first, to show it privately)."""
        return input_problem(self.context(), text, files=files)

    def file_problem(self, name: str, mimetype: str = "", size: int | None = None) -> FileProblem | None:
        """Why an attached file will not be read (an image, a type askdesk cannot read, over
        ASKDESK_FILE_MAX_MB), told before the surface downloads it; None: download it."""
        return file_problem(name, mimetype, size, self.settings)

    # ----------------------------------------------------------------- the turn
    def language_of(self, text: str) -> str:
        """The language of a message alone, for notes sent before its turn (rate limit, a channel
        askdesk is not enabled in); English when it cannot tell."""
        return self.clear_language(text) or "en"

    def clear_language(self, text: str) -> str | None:
        """The language `text` is clearly written in; None when it is too short or mixed to tell
        (a note outside a turn then takes the person's locale: bot/note_language.py)."""
        return message_language(text or "")

    async def language(self, req: AskRequest) -> str:
        """The language to answer `req` in: its text's, else (a short or mixed follow-up) the
        asker's earlier messages in the thread, else English."""
        if (lang := message_language(req.text or "")) is not None:
            return lang
        try:
            history = req.history if req.history is not None else (await self.state.load(req.surface, req.thread_id)).messages
        except Exception as exc:  # the store is down: the turn reports it, not this
            log.warning("could not read the thread for its language: %s", type(exc).__name__)
            history = []
        return turn_language(req.text or "", [m.content for m in history if m.role == "user" and m.content])

    async def answer(self, req: AskRequest, progress: ProgressFn | None = None,
                     on_text: TextFn | None = None) -> AnswerResult:
        """The turn, its fixed sentences (notes, refusal, errors) in the asker's language."""
        lang = await self.language(req)
        with speaking(lang):
            result = await self._answer(req, progress, on_text)
        result.language = lang
        return result

    async def _answer(self, req: AskRequest, progress: ProgressFn | None, on_text: TextFn | None) -> AnswerResult:
        ctx = self.context(req.collection)
        text = (req.text or "").strip()
        span = NOOP
        if input_problem(ctx, text, files=bool(req.attachments)) is None:
            span = self.tracer.turn("askdesk turn", {"text": text},
                                    metadata={"thread_id": req.thread_id, "surface": req.surface})
        turn = Turn(request=req, text=text, progress=spoken(progress, ctx.prompts), span=span,
                    retrieval=Retrieval(ctx.knowledge, span),
                    answer_text=AnswerText(on_text if self.settings.stream_answers else None))
        if ctx.models.router is not None and self.settings.translate_queries:  # the query in the base's other languages
            turn.retrieval.model = CountedModel(ctx.models.router, turn.ledger)
        budget = self.settings.turn_timeout
        try:  # every search of the turn sees only what its audience may (agent/audience.py)
            with deadline(budget - reserve(budget)), viewing(None if req.audience is None else frozenset(req.audience)):
                if ctx.provided is not None and self.models.agent is not None:
                    await ctx.provided.ready()  # plug-in providers' tools (MCP servers), before the first prompt
                for stage in (CONFIRMED if req.confirmation is not None else self.stages):
                    await stage(turn, ctx)
        except Exception as exc:
            turn.result = apology(exc, turn.route, turn.span, self.prompts, shown=bool(turn.answer_text.shown))
            turn.result.answer = await turn.answer_text.end_with(turn.result.answer)  # after any text already shown
            turn.span = NOOP
        result = turn.result
        assert result is not None, "the stages ended without an answer"
        if turn.file_notes and not result.answer.startswith(turn.answer_text.shown):
            result.answer = await turn.answer_text.end_with(result.answer)  # after the files' notes, as shown
        result.llm_calls = len(turn.ledger)
        result.latency_ms = (time.perf_counter() - turn.started) * 1000
        # surfaces that own their history (Slack threads) keep it there; a private answer is kept nowhere
        if turn.remember and req.history is None and not req.private:
            await self._remember(req, turn.text, result)
        turn.span.end({"answer": result.answer, "route": result.route, "llm_calls": result.llm_calls,
                       "tool_calls": result.tool_calls, "search_only": result.search_only})
        return result

    async def route(self, text: str, history: list[ChatMessage] | None = None,
                    collection: str | None = None) -> Route:
        """How a message would be routed in its thread, without answering it (evaluation)."""
        ctx = self.context(collection)
        turn = Turn(request=AskRequest(text=text, history=list(history or []), collection=collection), text=text.strip(),
                    answer_text=AnswerText(None), retrieval=Retrieval(ctx.knowledge))
        for stage in (recall, read, classify):
            await stage(turn, ctx)
        assert turn.route is not None, "classification ended without a route"
        return turn.route

    async def _remember(self, req: AskRequest, text: str, result: AnswerResult) -> None:
        try:
            await self.state.append(req.surface, req.thread_id, [
                ChatMessage(role="user", content=text), ChatMessage(role="assistant", content=result.answer)])
        except Exception:
            log.exception("could not save the conversation turn")

    async def suggested_prompts(self, configured: list[str] | None = None) -> list[str]:
        """Questions to offer a new user: the surface's setting, else the deployment's (domain
        file, or questions about the biggest documents), then each registry command's example."""
        if configured:
            return list(configured)
        identity = await self.identity.load(None)
        return [*identity.prompts, *(c.example for c in self.commands() if c.example)]

    # ----------------------------------------------------------------- commands
    def commands(self) -> list[Command]:
        """Every capability's commands (a registry's `/NAME`), for the surfaces to offer."""
        return [command for capability in self.capabilities() for command in capability.commands()]

    async def command(self, name: str, text: str) -> tuple[CommandResult, int]:
        """Run command `name` on `text`: its result and the model calls it made (a registry reads
        words its parser could not place with the router model). KeyError: no such command."""
        found = self.capabilities().command(name)
        if found is None:
            raise KeyError(name)
        capability, _ = found
        ledger = Ledger()
        model = CountedModel(self.models.router, ledger) if self.models.router is not None else None
        return await capability.run_command(name, text, model=model), len(ledger)

    # ----------------------------------------------------------------- learned answers
    async def save_learned(self, *, key: str, question: str, answer: str, expert: str,
                           when: datetime, asked_in: str | None = None, owner: "Owner | None" = None) -> str:
        """Keep an expert's answer as a document of the knowledge base, searchable at once
        (agent/knowledge/learned.py); returns its name. An answer to a question asked in a place
        some source is limited to (`asked_in`, the HR channel) is seen by that place only.
        `owner`: who is asked to review it before its review date (agent/knowledge/learned_review.py)."""
        from agent.sources.config import restricted_places

        place = (asked_in or "").split(";", 1)[0]
        audience = [place] if place and place in restricted_places(self.settings) else None
        name = await self.learned_answers.save(key=key, question=question, answer=answer, expert=expert,
                                               when=when, audience=audience, owner=owner)
        from agent.evaluation.regressions import add_case  # the expert's answer becomes a test

        add_case(self.settings, question, name, origin="console" if key.startswith("console-") else "escalation")
        return name

    def learned(self) -> list["LearnedAnswer"]:
        return self.learned_answers.listed()

    async def remove_learned(self, name: str) -> bool:
        """Take a learned answer out of the folder and the index; False: no such answer."""
        removed = await self.learned_answers.retire(name)
        if removed:  # taken out on purpose: its cases are not regressions
            from agent.evaluation.regressions import forget_expected

            forget_expected(self.settings, name)
        return removed


def spoken(progress: ProgressFn | None, prompts: PromptSet) -> ProgressFn | None:
    """The surface's progress callback, each fixed line said in the turn's language (a tool's
    "Searching the knowledge base…" is one of the prompts' messages)."""
    if progress is None:
        return None

    async def say(line: str) -> None:
        await progress(prompts.said(line))

    return say
