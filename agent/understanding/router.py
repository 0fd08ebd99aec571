"""Intent router: pre-filter first, the cheap router model only for what it cannot decide.

Routes: offtopic (refusal), smalltalk (greeting), knowledge, facility, clarify. For
knowledge and facility the decision carries a self-contained search query (follow-ups
rewritten with the thread). The knowledge-base search the pre-filter needs for its
similarity check is kept as the agent's prefetched context, so it is never run twice.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent.understanding.domain import EMPTY, Domain
from agent.messages import ChatMessage
from agent.understanding.wording import (
    PrefilterVerdict,
    classify_rules,
    classify_similarity,
    heuristic_rewrite,
    looks_like_facility_search,
    own_terms,
    previous_user_messages,
    refers_back,
    starts_like_followup,
)
from agent.prompts import PromptSet
from agent.providers.base import Model, ProviderError, Usage
from agent.turn.steps import RouteName, RouterDecision
from agent.tools.base import ToolResult
from agent.tracing import NOOP, Span

log = logging.getLogger(__name__)


# Runs get_formatted_context for a query (fused with the `also` (query, weight) searches);
# returns None when the knowledge base is unavailable.
ContextFn = Callable[..., Awaitable[ToolResult | None]]

# Weight of the thread-context search fused with the message's own search (weight 1, no model):
# the message alone carries the new detail, the context carries the topic. The less a message
# says on its own, the more its context counts: a full question (STANDALONE_TERMS words of its
# own or more) weighs as much as its context, so a topic switch is not dragged to the old topic;
# "who runs it?" (one word of its own) leans on the thread almost three to one.
CONTEXT_WEIGHT = 1.0
CONTEXT_WEIGHT_MAX = 3.0
STANDALONE_TERMS = 6


def context_weight(text: str) -> float:
    missing = max(0, STANDALONE_TERMS - own_terms(text))
    return round(CONTEXT_WEIGHT + (CONTEXT_WEIGHT_MAX - CONTEXT_WEIGHT) * missing / STANDALONE_TERMS, 3)


class TopicJudge(Protocol):
    """agent.understanding.gate.TopicCheck: is a message about the knowledge base at all?"""

    async def protected(self, text: str) -> str | None: ...

    async def judge(self, text: str, kb_best: float | None, *, in_thread: bool = False,
                    refers_back: bool = False) -> Any: ...


@dataclass
class Route:
    route: RouteName
    query: str
    decided_by: str  # prefilter | model | heuristic
    reason: str = ""
    rewritten: bool = False
    clarification: str | None = None
    prefetch: ToolResult | None = None  # knowledge context already retrieved for `query`
    best_score: float | None = None
    also: list[tuple[str, float]] = field(default_factory=list)  # searches fused with `query`
    usages: list[Usage] = field(default_factory=list)  # every router-model attempt, failed ones too

    @property
    def llm_calls(self) -> int:
        return len(self.usages)


def best_dense_score(result: ToolResult | None) -> float | None:
    scores = [p.dense_score for p in (result.passages if result else []) if p.dense_score is not None]
    return max(scores) if scores else None


@dataclass
class Router:
    prompts: PromptSet
    context: ContextFn
    model: Model | None = None  # the router model; None = pre-filter + heuristics only
    domain: str = ""
    capabilities: str = ""
    refuse_below: float = 0.80
    accept_above: float = 0.86
    model_first: bool = False  # benchmarks: ask the model for everything the rules leave open
    prefetch: bool = True  # False (benchmark baseline): the router model's route is not followed by a search
    domain_words: Domain = EMPTY  # the deployment's domain file (facility nouns, terms)
    topic: TopicJudge | None = None  # the off-topic check by meaning (None: similarity floor only)

    async def route(self, text: str, history: list[ChatMessage], span: Span = NOOP) -> Route:
        rules = classify_rules(text, history, self.domain_words)
        if rules.route is not None:
            return self._from_prefilter(rules, text, history)
        spent: list[Usage] = []
        if self.model is not None and (rules.followup or self.model_first):
            decided, spent = await self._ask_model(text, history, span)
            if decided is not None:
                return decided
        # In a thread, always search the message alone AND in the thread's context, fused: no
        # need to recognise a follow-up by its wording, and the new detail is not drowned.
        contextual = heuristic_rewrite(text, history) if previous_user_messages(history) else text
        also = [(contextual, context_weight(text))] if contextual != text else []
        if rules.followup and looks_like_facility_search(contextual, self.domain_words):
            return Route("facility", contextual, "heuristic", "follow-up of a facility search", rewritten=True,
                         usages=spent)
        if rules.followup:  # "and for two-parent families?": never refused, it leans on the thread
            prefetch = await self.context(text, also=also) if also else await self.context(text)
            return Route("knowledge", text, "heuristic", "follow-up searched with its thread", prefetch=prefetch,
                         best_score=best_dense_score(prefetch), also=also, rewritten=bool(also), usages=spent)
        alone = await self.context(text)
        best = best_dense_score(alone)
        # In a thread, only a message that is off-topic by a wide margin on its own is refused
        # ("thanks! now tell me a joke"); one that merely says little alone leans on the thread.
        # "and for 5 people?" continues a thread askdesk may not see (a new Slack mention): not refused
        topic = (await self.topic.judge(text, best, in_thread=bool(also), refers_back=bool(also) and refers_back(text))
                 if self.topic is not None and not starts_like_followup(text) else None)
        protected = bool(await self.topic.protected(text)) if self.topic is not None else False
        verdict = classify_similarity(best, topic, protected=protected or bool(also),
                                      refuse_below=self.refuse_below, accept_above=self.accept_above)
        prefetch = alone
        if also and verdict.route != "offtopic":
            prefetch = await self.context(text, also=also)
            best = best_dense_score(prefetch)
        if verdict.route is not None:
            return Route(verdict.route, text, "prefilter", verdict.reason, prefetch=prefetch, best_score=best, also=also,
                         rewritten=bool(also))
        if self.model is not None:
            decided, spent = await self._ask_model(text, history, span, prefetch=None if also else prefetch)
            if decided is not None:
                decided.best_score = best
                return decided
        # No model (or it failed): answer rather than refuse a message we are unsure about.
        return Route("knowledge", text, "heuristic", verdict.reason + "; default knowledge", prefetch=prefetch,
                     best_score=best, also=also, rewritten=bool(also), usages=spent)

    def _from_prefilter(self, rules: PrefilterVerdict, text: str, history: list[ChatMessage]) -> Route:
        query = text
        rewritten = False
        if rules.route == "facility" and rules.followup:
            query, rewritten = heuristic_rewrite(text, history), True
        return Route(rules.route or "knowledge", query, "prefilter", rules.reason, rewritten=rewritten)

    async def _ask_model(self, text: str, history: list[ChatMessage], span: Span,
                         prefetch: ToolResult | None = None) -> tuple[Route | None, list[Usage]]:
        """The model's route (None when it failed) and the attempts it took."""
        prompt = self.prompts.render(
            "router",
            domain=self.domain,
            capabilities=self.capabilities,
            history=[{"role": m.role, "content": m.content} for m in history if m.role in ("user", "assistant")],
            message=text,
        )
        messages = [ChatMessage(role="user", content=prompt)]
        child = span.child("router model", "llm", {"messages": [m.model_dump() for m in messages]})
        try:
            completion = await self.model.complete(messages, RouterDecision)  # type: ignore[union-attr]
        except ProviderError as exc:
            # The router is an optimisation: when it fails, the pre-filter heuristics still route.
            log.warning("router model failed (%s); using the pre-filter heuristics", type(exc).__name__)
            child.end(error=str(exc))
            return None, exc.attempts
        decision: RouterDecision = completion.output
        child.end({"route": decision.route, "search_query": decision.search_query, "usage": completion.usage.model_dump()})
        query = (decision.search_query or "").strip() or text
        route = Route(decision.route, query, "model", "router model", rewritten=query != text,
                      clarification=decision.clarification, usages=completion.attempts)
        if decision.route == "knowledge" and self.prefetch:
            route.prefetch = prefetch if (prefetch is not None and query == text) else await self.context(query)
        return route, completion.attempts


def describe(route: Route) -> dict[str, Any]:
    """Trace/JSON view of a routing decision (no message text)."""
    return {"route": route.route, "decided_by": route.decided_by, "reason": route.reason,
            "rewritten": route.rewritten, "best_score": route.best_score, "fused_searches": 1 + len(route.also)}
