"""The one entry point every surface calls: a question in, an answer with sources out.

`Askdesk.answer` runs router -> (prefetch) -> agent loop, reads/writes memory, traces the
turn, and degrades to a search-only answer when no provider is configured.
Surfaces (terminal, Slack, Teams) never talk to the loop, the router or providers directly.
"""

from __future__ import annotations

import inspect
import logging
import time
import traceback
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.config import Settings
from agent.memory import SQLiteConversationStore, trim_history
from agent.messages import ChatMessage
from agent.prompts import PromptSet, default_prompts, load_prompts
from agent.providers.base import Completion, ProviderError, Usage
from agent.references import Reference
from agent.router import Route as RouteDecision, Router, describe
from agent.tracing import NOOP, Span, Tracer

Route = Literal["offtopic", "smalltalk", "knowledge", "facility", "clarify"]
Surface = Literal["cli", "slack", "teams", "eval", "bench"]

# Surfaces pass this to show tool progress ("Searching the knowledge base…").
ProgressFn = Callable[[str], Awaitable[None]]


class AskRequest(BaseModel):
    text: str
    surface: Surface = "cli"
    thread_id: str = "default"  # Slack channel:thread_ts, Teams conversation id, terminal session
    user_id: str | None = None
    history: list[ChatMessage] | None = None  # given by surfaces that own history (Slack thread)
    collection: str | None = None  # knowledge collection override (per Slack channel)


class AnswerResult(BaseModel):
    answer: str
    route: Route
    references: list[Reference] = Field(default_factory=list)
    confidence: float | None = None
    llm_calls: int = 0
    tool_calls: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    search_only: bool = False
    notice: str | None = None  # e.g. "No LLM provider configured: set OPENAI_API_KEY ..."
    rewritten_query: str | None = None
    facilities: list[dict[str, Any]] = Field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "route": self.route,
            "references": [r.model_dump() for r in self.references],
            "llm_calls": self.llm_calls,
            "tool_calls": self.tool_calls,
            "latency_ms": round(self.latency_ms, 1),
            "search_only": self.search_only,
            "notice": self.notice,
        }


# --------------------------------------------------------------------------- the service

log = logging.getLogger("askdesk.service")

# Which variable enables each provider (for the "no LLM configured" notice).
KEY_ENV = {"openai": "OPENAI_API_KEY", "groq": "GROQ_API_KEY", "gemini": "GEMINI_API_KEY",
           "compatible": "ASKDESK_COMPATIBLE_BASE_URL", "ollama": "OLLAMA_HOST"}


@lru_cache(maxsize=32)
def _accepts_calls(chain_type: type) -> bool:
    return "calls" in inspect.signature(chain_type.complete).parameters


class _Metered:
    """Binds a model chain to one turn's call log, so `llm_calls` counts every attempt."""

    def __init__(self, chain: Any, calls: list[Usage]) -> None:
        self._chain = chain
        self._calls = calls
        # ModelChain logs every attempt (failed ones too) into `calls`; a plain model does not.
        self._logs_calls = _accepts_calls(type(chain))

    async def complete(self, messages: list[ChatMessage], response_model: type) -> Completion:
        if self._logs_calls:
            return await self._chain.complete(messages, response_model, calls=self._calls)
        completion = await self._chain.complete(messages, response_model)
        self._calls.append(completion.usage)
        return completion


def _short_id() -> str:
    return uuid.uuid4().hex[:8]


@dataclass
class ServiceModels:
    """The model chains of a service; built from settings by make_models (tests inject their own)."""

    router: Any | None  # ModelChain for the router (None: pre-filter only)
    agent: Any | None  # ModelChain for the agent (None: search-only answers)
    notice: str | None  # why answers are search-only


def _no_llm_notice(settings: Settings, prompts: PromptSet) -> str:
    if settings.agent_model:
        provider = settings.agent_model.split("/", 1)[0].lower()
        env = KEY_ENV.get(provider, "the provider's API key")
        return prompts.render("no_provider", reason=f"{settings.agent_model} has no key", env_hint=env)
    return prompts.render(
        "no_provider", reason="no model and no provider key found",
        env_hint="ASKDESK_AGENT_MODEL=openai/gpt-4.1-mini and OPENAI_API_KEY (or GROQ_API_KEY / GEMINI_API_KEY)",
    )


def make_models(settings: Settings, prompts: PromptSet) -> ServiceModels:
    from agent.providers.chain import ModelChain

    agent = ModelChain.for_agent(settings)
    if not agent.configured:
        return ServiceModels(router=None, agent=None, notice=_no_llm_notice(settings, prompts))
    router = ModelChain.for_router(settings)
    return ServiceModels(router=router if router.configured else None, agent=agent, notice=None)


class Askdesk:
    """Router -> prefetch -> agent loop, with memory and tracing; never raises for provider or
    vector-store failures (the user gets an apology with a reference id, the log the details)."""

    def __init__(self, settings: Settings, runtime: Any, *, prompts: PromptSet | None = None,
                 store: Any | None = None, models: ServiceModels | None = None, tracer: Tracer | None = None,
                 owns_runtime: bool = False, prefetch: bool = True, router_model_first: bool = False) -> None:
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
        self._registries: dict[str | None, Any] = {}
        from agent.domain import domain_path, load_domain

        self.domain = load_domain(domain_path(settings))  # a broken domain file fails at start-up

    @classmethod
    def create(cls, settings: Settings, runtime: Any | None = None, **kwargs: Any) -> "Askdesk":
        """Validate prompts and models at start-up (a broken prompt fails here, not mid-turn)."""
        owns = runtime is None
        if runtime is None:
            from agent.runtime import Runtime

            runtime = Runtime.open(settings)
        return cls(settings, runtime, owns_runtime=owns, **kwargs)

    async def close(self) -> None:
        await self.store.close()
        self.tracer.close()
        for chain in {id(c): c for c in (self.models.router, self.models.agent) if c is not None}.values():
            close = getattr(chain, "aclose", None)
            if close is not None:
                await close()
        if self._owns_runtime:
            await self.runtime.close()

    @property
    def search_only(self) -> bool:
        return self.models.agent is None

    # ----------------------------------------------------------------- helpers
    def registry(self, collection: str | None):
        if collection not in self._registries:
            from agent.tools.registry import build_registry

            registry = build_registry(self.runtime, collection=collection)
            self._registries[collection] = (registry, registry.describe())
        return self._registries[collection][0]

    def tool_specs(self, collection: str | None) -> list[dict[str, Any]]:
        self.registry(collection)
        return self._registries[collection][1]

    def router(self, collection: str | None, calls: list[Usage], span: Span = NOOP) -> Router:
        async def context(query: str, also: list[tuple[str, float]] | tuple = ()):
            from agent.knowledge.search import KnowledgeBaseUnavailable
            from agent.tools.formatted_context import get_formatted_context

            child = span.child("tool:get_formatted_context", "tool", {"query": query})
            try:
                result = await get_formatted_context(self.runtime, query, self.settings.top_k, collection=collection,
                                                     also=also)
            except KnowledgeBaseUnavailable as exc:
                log.warning("knowledge base unavailable during routing: %s", type(exc).__name__)
                child.end(error=type(exc).__name__)
                return None
            child.end({"text": result.text, "references": len(result.references), "weak_evidence": result.weak_evidence})
            return result

        model = _Metered(self.models.router, calls) if self.models.router is not None else None
        return Router(
            prompts=self.prompts, context=context, model=model,
            domain=self.settings.assistant_domain, capabilities=self.settings.assistant_capabilities,
            refuse_below=self.settings.router_refuse_below, accept_above=self.settings.router_accept_above,
            model_first=self.router_model_first, prefetch=self.prefetch,
            domain_words=self.domain, topic=self.topic_check(collection),
        )

    def topic_check(self, collection: str | None):
        from agent.topicality import TopicCheck

        return TopicCheck(self.runtime, collection, self.domain, self.settings.router_offtopic_margin)

    async def _knowledge_context(self, route: RouteDecision, collection: str | None):
        """The router's prefetch, or a fresh search (raises KnowledgeBaseUnavailable)."""
        if route.prefetch is not None:
            return route.prefetch
        from agent.tools.formatted_context import get_formatted_context

        return await get_formatted_context(self.runtime, route.query, self.settings.top_k, collection=collection)

    async def _facility_prefetch(self, route: RouteDecision, registry) -> tuple[dict[str, Any], Any] | None:
        if "search_facilities" not in registry.tools:
            return None
        from agent.facilities.query_parser import parse_with_registry

        try:
            parsed = await parse_with_registry(self.runtime, route.query)
            args = parsed.args.model_dump(exclude_none=True, exclude_defaults=True)
        except Exception as exc:  # e.g. the registry is not loaded: the tool says so itself
            log.warning("facility query parse failed: %s", type(exc).__name__)
            args = {"query": route.query}
        return args, await registry.run("search_facilities", args)

    # ----------------------------------------------------------------- the turn
    async def answer(self, req: AskRequest, progress: ProgressFn | None = None) -> AnswerResult:
        started = time.perf_counter()
        text = (req.text or "").strip()
        if not text:
            return AnswerResult(answer=self.prompts.render("empty_message"), route="clarify")
        if len(text) > self.settings.max_message_chars:
            return AnswerResult(
                answer=self.prompts.render("too_long", limit=self.settings.max_message_chars, length=len(text)),
                route="clarify",
            )
        span = self.tracer.turn("askdesk turn", {"text": text},
                                metadata={"thread_id": req.thread_id, "surface": req.surface})
        calls: list[Usage] = []
        routed: dict[str, Route] = {"route": "knowledge"}  # what a failed turn reports
        result: AnswerResult
        try:
            if req.history is not None:
                history = req.history
            else:
                history = (await self.store.load(req.surface, req.thread_id)).messages
            history = trim_history([m for m in history if m.role in ("user", "assistant")], self.settings.history_chars)
            result = await self._turn(text, history, req, progress, calls, span, routed)
        except ProviderError as exc:
            ref = _short_id()
            log.error("turn %s: model provider failed: %s (%s)", ref, type(exc).__name__, exc.provider)
            result = AnswerResult(answer=self.prompts.render("provider_error", ref=ref), route=routed["route"])
            span.end(error=f"{ref}: {type(exc).__name__}")
            span = NOOP
        except Exception as exc:
            ref = _short_id()
            from agent.knowledge.search import KnowledgeBaseUnavailable

            if isinstance(exc, KnowledgeBaseUnavailable):
                log.error("turn %s: knowledge base unavailable: %s", ref, exc)
                message = self.prompts.render("store_error", ref=ref)
            else:
                # type and stack only: exception messages can quote user text (e.g. validation errors)
                log.error("turn %s failed: %s\n%s", ref, type(exc).__name__,
                          "".join(traceback.format_tb(exc.__traceback__)))
                message = self.prompts.render("internal_error", ref=ref)
            result = AnswerResult(answer=message, route=routed["route"])
            span.end(error=f"{ref}: {type(exc).__name__}")
            span = NOOP
        result.llm_calls = len(calls)
        result.latency_ms = (time.perf_counter() - started) * 1000
        if req.history is None:
            try:
                await self.store.append(req.surface, req.thread_id, [
                    ChatMessage(role="user", content=text), ChatMessage(role="assistant", content=result.answer)])
            except Exception:
                log.exception("could not save the conversation turn")
        span.end({"answer": result.answer, "route": result.route, "llm_calls": result.llm_calls,
                  "tool_calls": result.tool_calls, "search_only": result.search_only})
        return result

    async def _turn(self, text: str, history: list[ChatMessage], req: AskRequest, progress: ProgressFn | None,
                    calls: list[Usage], span: Span, routed: dict[str, Route]) -> AnswerResult:
        collection = req.collection
        router_span = span.child("router", "chain", {"text": text})
        route = await self.router(collection, calls, router_span).route(text, history, router_span)
        routed["route"] = route.route
        router_span.end(describe(route) | {"query": route.query})
        searched = route.also[0][0] if route.also else route.query  # a follow-up: its search in the thread
        common = dict(route=route.route, rewritten_query=searched if route.rewritten else None)

        if route.route == "offtopic":
            return AnswerResult(answer=self.prompts.render("refusal", capabilities=self.settings.assistant_capabilities), **common)
        if route.route == "smalltalk":
            return AnswerResult(answer=self.prompts.render("greeting", capabilities=self.settings.assistant_capabilities), **common)
        if route.route == "clarify":
            return AnswerResult(answer=route.clarification or self.prompts.render("clarification"), **common)

        from agent.loop import run_agent

        registry = self.registry(collection)
        prefetched = await self._prefetch(route, registry, collection, progress, span)
        if self.search_only:
            return self._search_only_answer(route, prefetched, common)

        loop_result = await run_agent(
            model=_Metered(self.models.agent, calls), registry=registry, prompts=self.prompts,
            question=text,
            history=history, prefetched=prefetched, max_iterations=self.settings.max_iterations,
            domain=self.settings.assistant_domain, progress=progress, span=span,
            tool_specs=self.tool_specs(collection),
        )
        return AnswerResult(
            answer=loop_result.answer, references=loop_result.references, confidence=loop_result.confidence,
            tool_calls=loop_result.tool_calls, facilities=loop_result.facilities, **common,
        )

    async def _prefetch(self, route: RouteDecision, registry, collection: str | None,
                        progress: ProgressFn | None, span: Span) -> list:
        """The tool result the agent starts with: the router's search, or the facility search."""
        from agent.loop import Prefetched

        if not (self.prefetch or self.search_only):
            return []
        if route.route == "knowledge":
            if progress is not None and "get_formatted_context" in registry.tools:
                await progress(registry.tools["get_formatted_context"].progress)
            context = route.prefetch
            if context is None:
                child = span.child("tool:get_formatted_context", "tool", {"query": route.query})
                context = await self._knowledge_context(route, collection)
                child.end({"text": context.text, "weak_evidence": context.weak_evidence})
            return [Prefetched("get_formatted_context", {"query": route.query}, context)]
        if route.route == "facility":
            if progress is not None and "search_facilities" in registry.tools:
                await progress(registry.tools["search_facilities"].progress)
            child = span.child("tool:search_facilities", "tool", {"query": route.query})
            found = await self._facility_prefetch(route, registry)
            child.end({"arguments": found[0], "text": found[1].text} if found else {})
            if found is not None:
                return [Prefetched("search_facilities", found[0], found[1])]
        return []

    def _search_only_answer(self, route: RouteDecision, prefetched: list, common: dict[str, Any]) -> AnswerResult:
        from agent import search_only

        first = prefetched[0].result if prefetched else None
        if route.route == "facility":
            answer = search_only.facility_answer(first, self.prompts)
            references = list(first.references) if first else []
            facilities = first.data if first is not None and isinstance(first.data, list) else []
        else:
            answer = search_only.knowledge_answer(first, self.prompts)
            references = list(first.references)[: search_only.MAX_PASSAGES] if first else []
            facilities = []
        return AnswerResult(
            answer=answer, references=references, search_only=True, notice=self.models.notice,
            tool_calls=[p.name for p in prefetched], facilities=facilities, **common,
        )
