"""The one entry point every surface calls: a question in, an answer with sources out.

`Askdesk.answer` reads top to bottom: check the input -> route -> prefetch -> agent loop
(or a search-only answer when no provider is configured) -> remember -> trace, all within
ASKDESK_TURN_TIMEOUT (agent/deadline.py). It never raises: when the models fail or run out of
time the user gets the search results with a note (agent/turn/degrade.py), and only when the
search fails too an apology with a reference id, the log the details. Surfaces (terminal,
Slack, Teams) never talk to the loop, the router or providers directly.
"""

from __future__ import annotations

import asyncio
import logging
import time
from functools import partial
from typing import Any

from agent import search_only
from agent.turn.answer_stream import AnswerText, TextFn
from agent.answers import AnswerResult, AskRequest, Surface
from agent.config import Settings
from agent.deadline import ROUTER_SHARE, deadline, remaining, reserve
from agent.turn.degrade import apology, search_results_instead
from agent.understanding.domain import domain_path, load_domain
from agent.understanding.identity import Identities
from agent.turn.loop import Prefetched, ProgressFn, run_agent
from agent.state.memory import ConversationStore, SQLiteConversationStore, trim_history
from agent.messages import ChatMessage
from agent.providers.models import ServiceModels, make_models
from agent.prefetch import Prefetcher
from agent.prompts import PromptSet, default_prompts, load_prompts
from agent.providers.base import ProviderError
from agent.providers.chain import ModelChain
from agent.understanding.router import Route, Router, describe
from agent.runtime import Runtime
from agent.understanding.gate import TopicCheck
from agent.tools.registry import build_registry
from agent.tracing import NOOP, Span, Tracer

__all__ = ["AnswerResult", "AskRequest", "Askdesk", "ProgressFn", "ServiceModels", "Surface", "make_models"]

log = logging.getLogger("askdesk.service")


class Askdesk:
    """Router -> prefetch -> agent loop with memory, tracing and a turn deadline; never raises."""

    def __init__(self, settings: Settings, runtime: Runtime, *, prompts: PromptSet | None = None,
                 store: ConversationStore | None = None, models: ServiceModels | None = None,
                 tracer: Tracer | None = None, owns_runtime: bool = False, prefetch: bool = True,
                 router_model_first: bool = False) -> None:
        self.settings = settings
        self.runtime = runtime
        if prompts is None:
            prompts = load_prompts(settings.prompts_dir) if settings.prompts_dir else default_prompts()
        self.prompts = prompts
        self.store = store if store is not None else SQLiteConversationStore(settings.sqlite_path)
        self.models = models if models is not None else make_models(settings, self.prompts)
        self.tracer = tracer or Tracer(redact_text=settings.trace_redact)
        self.prefetch = prefetch  # False only in benchmarks: the router -> tool -> answer baseline
        self.router_model_first = router_model_first  # benchmarks: the router model sees every message
        self._owns_runtime = owns_runtime
        self._tools: dict[str | None, tuple[Prefetcher, list[dict[str, Any]]]] = {}
        self.domain = load_domain(domain_path(settings))  # a broken domain file fails at start-up
        self.identity = Identities(settings, self.domain, runtime)  # what askdesk says it is about

    @classmethod
    def create(cls, settings: Settings, runtime: Runtime | None = None, **kwargs: Any) -> Askdesk:
        """Validate prompts and models at start-up (a broken prompt fails here, not mid-turn)."""
        if runtime is None:
            return cls(settings, Runtime.open(settings), owns_runtime=True, **kwargs)
        return cls(settings, runtime, **kwargs)

    async def close(self) -> None:
        await self.store.close()
        self.tracer.close()
        for model in {id(m): m for m in (self.models.router, self.models.agent) if m is not None}.values():
            if isinstance(model, ModelChain):
                await model.aclose()
        if self._owns_runtime:
            await self.runtime.close()

    @property
    def search_only(self) -> bool:
        return self.models.agent is None

    def tools(self, collection: str | None) -> tuple[Prefetcher, list[dict[str, Any]]]:
        """The tool registry for a knowledge collection (as a Prefetcher) and its schemas, built once."""
        if collection not in self._tools:
            registry = build_registry(self.runtime, collection=collection)
            prefetcher = Prefetcher(self.runtime, registry, self.models.router, self.prompts, collection)
            self._tools[collection] = (prefetcher, registry.describe())
        return self._tools[collection]

    # ----------------------------------------------------------------- the turn
    def input_problem(self, text: str) -> str | None:
        """The note for an empty or too long message, else None (Slack asks first, to show it privately)."""
        text, limit = (text or "").strip(), self.settings.max_message_chars
        if not text:
            return self.prompts.render("empty_message")
        return self.prompts.render("too_long", limit=limit, length=len(text)) if len(text) > limit else None

    async def answer(self, req: AskRequest, progress: ProgressFn | None = None,
                     on_text: TextFn | None = None) -> AnswerResult:
        started = time.perf_counter()
        text = (req.text or "").strip()
        if problem := self.input_problem(text):
            return AnswerResult(answer=problem, route="clarify")
        span = self.tracer.turn("askdesk turn", {"text": text},
                                metadata={"thread_id": req.thread_id, "surface": req.surface})
        route: Route | None = None
        budget = self.settings.turn_timeout
        streamed = AnswerText(on_text if self.settings.stream_answers else None)
        try:
            with deadline(budget - reserve(budget)):  # the rest is kept to answer without the models
                history = req.history if req.history is not None else (await self.store.load(req.surface, req.thread_id)).messages
                history = trim_history([m for m in history if m.role in ("user", "assistant")], self.settings.history_chars)
                await self.identity.load(req.collection)
                with deadline(budget * ROUTER_SHARE):  # then the LLM-free pre-filter routes
                    route = await self._route(text, history, req.collection, span)
                result = await self._respond(text, history, route, req, progress, span, streamed)
        except Exception as exc:
            result = apology(exc, route, span, self.prompts, shown=bool(streamed.shown))
            result.answer = await streamed.end_with(result.answer)  # after any answer text already shown
            span = NOOP
        result.latency_ms = (time.perf_counter() - started) * 1000
        if req.history is None:  # surfaces that own their history (Slack threads) keep it there
            await self._remember(req, text, result)
        span.end({"answer": result.answer, "route": result.route, "llm_calls": result.llm_calls,
                  "tool_calls": result.tool_calls, "search_only": result.search_only})
        return result

    def router(self, collection: str | None, span: Span = NOOP) -> Router:
        prefetcher, _ = self.tools(collection)
        identity = self.identity.get(collection)
        return Router(
            prompts=self.prompts, context=partial(prefetcher.similar, span=span), model=self.models.router,
            domain=identity.domain, capabilities=identity.capabilities,
            refuse_below=self.settings.router_refuse_below, accept_above=self.settings.router_accept_above,
            model_first=self.router_model_first, prefetch=self.prefetch,
            domain_words=self.domain, topic=self.topic_check(collection),
        )

    def topic_check(self, collection: str | None) -> TopicCheck:
        """The off-topic check by meaning for one knowledge collection (agent/understanding/gate.py)."""
        return TopicCheck(self.runtime, collection, self.domain, self.settings.router_offtopic_margin)

    async def _route(self, text: str, history: list[ChatMessage], collection: str | None, span: Span) -> Route:
        router_span = span.child("router", "chain", {"text": text})
        route = await self.router(collection, router_span).route(text, history, router_span)
        router_span.end(describe(route) | {"query": route.query})
        return route

    async def _respond(self, text: str, history: list[ChatMessage], route: Route, req: AskRequest,
                       progress: ProgressFn | None, span: Span, streamed: AnswerText) -> AnswerResult:
        searched = route.also[0][0] if route.also else route.query  # a message in its thread: that search
        common: dict[str, Any] = dict(route=route.route, rewritten_query=searched if route.rewritten else None,
                                      llm_calls=route.llm_calls)
        identity = self.identity.get(req.collection)
        if route.route in ("offtopic", "smalltalk"):
            name = "refusal" if route.route == "offtopic" else "greeting"
            return AnswerResult(answer=self.prompts.render(
                name, capabilities=identity.capabilities, examples=identity.examples), **common)
        if route.route == "clarify":
            return AnswerResult(answer=route.clarification or self.prompts.render("clarification"), **common)

        prefetcher, tool_specs = self.tools(req.collection)
        prefetched: list[Prefetched] = []
        if self.prefetch or self.search_only:
            prefetched = await prefetcher.run(route.route, route.query, span=span, progress=progress, done=route.prefetch)
            common["llm_calls"] += sum(p.llm_calls for p in prefetched)
        if self.models.agent is None:
            return search_only.answer(prefetched, self.prompts, notice=self.models.notice, **common)
        try:
            async with asyncio.timeout(remaining()):  # the deadline, even for a call that ignores it
                run = await run_agent(
                    model=self.models.agent, registry=prefetcher.registry, prompts=self.prompts, question=text,
                    history=history, prefetched=prefetched, max_iterations=self.settings.max_iterations,
                    domain=identity.domain, progress=progress, span=span, tool_specs=tool_specs,
                    answer=streamed)
        except (ProviderError, TimeoutError) as exc:
            log.warning("turn: no model answered (%s); answering with search results", type(exc).__name__)
            return await search_results_instead(exc, route, prefetched, common, prefetcher, span, streamed,
                                                self.prompts, self.models.notice, self.settings.turn_timeout)
        common["llm_calls"] += len(run.usages)
        return AnswerResult(answer=run.answer, references=run.references, confidence=run.confidence,
                            tool_calls=run.tool_calls, facilities=run.facilities, **common)

    async def _remember(self, req: AskRequest, text: str, result: AnswerResult) -> None:
        try:
            await self.store.append(req.surface, req.thread_id, [
                ChatMessage(role="user", content=text), ChatMessage(role="assistant", content=result.answer)])
        except Exception:
            log.exception("could not save the conversation turn")
