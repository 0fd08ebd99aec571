"""Which route a message takes: its wording first, then its meaning, the router model for
what both leave open.

Built once per knowledge collection. `read` looks at the wording only (no I/O): a greeting, a
registry search recognised by its words, a follow-up and the message rewritten with its
thread. `decide` adds the meaning: how close the message comes to the knowledge base (what
the turn's retrieval found for it) against the shipped off-topic examples (the gate), and asks
the router model for the doubtful cases. Searches are not run here: `find` is the turn's
retrieval, which runs each search once and keeps its result for the answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.capabilities.base import Capabilities, Found
from agent.capabilities.knowledge import best_score
from agent.messages import ChatMessage
from agent.tracing import NOOP, Span
from agent.understanding.router import Route, RouteOption, ask_router
from agent.understanding.wording import (
    classify_rules,
    classify_similarity,
    claimed_by,
    heuristic_rewrite,
    own_terms,
    previous_user_messages,
    refers_back,
    starts_like_followup,
)

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.understanding.gate import TopicCheck
    from agent.understanding.identity import Identity

# The turn's retrieval: the knowledge search for (query, also), or None when the knowledge
# base is unavailable (routing then cannot judge by meaning, and does not refuse).
FindFn = Callable[[str, tuple[tuple[str, float], ...]], Awaitable[Found | None]]

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


@dataclass
class Reading:
    """What the wording of a message says, before any search."""

    text: str
    history: list[ChatMessage]
    route: Route | None = None  # decided by the wording alone (a greeting, a registry search)
    followup: bool = False  # it leans on the thread ("and for a family of 6?")
    also: tuple[tuple[str, float], ...] = field(default_factory=tuple)  # the message in its thread, weighted


@dataclass
class Classifier:
    prompts: "PromptSet"
    capabilities: Capabilities
    gate: "TopicCheck | None"
    refuse_below: float
    accept_above: float

    def read(self, text: str, history: list[ChatMessage]) -> Reading:
        rules = classify_rules(text, history, self.capabilities.registries())
        if rules.route is not None:
            query = text
            if rules.route != "smalltalk" and rules.followup:
                query = heuristic_rewrite(text, history)
            route = Route(rules.route, query, "prefilter", rules.reason, rewritten=query != text)
            return Reading(text, history, route=route, followup=rules.followup)
        # In a thread, always search the message alone AND in the thread's context, fused: no
        # need to recognise a follow-up by its wording, and the new detail is not drowned.
        contextual = heuristic_rewrite(text, history) if previous_user_messages(history) else text
        also = ((contextual, context_weight(text)),) if contextual != text else ()
        return Reading(text, history, followup=rules.followup, also=also)

    def options(self) -> tuple[RouteOption, ...]:
        return tuple(RouteOption(c.name, c.description) for c in self.capabilities)

    async def ask(self, reading: Reading, model: "Model", identity: "Identity", span: Span) -> Route | None:
        return await ask_router(model, self.prompts, text=reading.text, history=reading.history,
                                domain=identity.domain, capabilities=identity.capabilities,
                                routes=self.options(), span=span)

    async def decide(self, reading: Reading, find: FindFn, *, model: "Model | None", identity: "Identity",
                     span: Span = NOOP) -> Route:
        if reading.route is not None:
            return reading.route
        text, also = reading.text, reading.also
        if model is not None and reading.followup:  # the model rewrites a follow-up best
            decided = await self.ask(reading, model, identity, span)
            if decided is not None:
                return decided
        contextual = also[0][0] if also else text
        if reading.followup:
            claimed = claimed_by(contextual, self.capabilities.registries())
            if claimed is not None:
                return Route(claimed.name, contextual, "heuristic", "follow-up of a registry search", rewritten=True)
            # "and for two-parent families?": never refused, it leans on the thread
            found = await find(text, also)
            return Route("knowledge", text, "heuristic", "follow-up searched with its thread",
                         best_score=best_score(found), also=list(also), rewritten=bool(also))
        best = best_score(await find(text, ()))
        # In a thread, only a message that is off-topic by a wide margin on its own is refused
        # ("thanks! now tell me a joke"); one that merely says little alone leans on the thread.
        # "and for 5 people?" continues a thread askdesk may not see (a new Slack mention): not refused
        topic = None
        if self.gate is not None and not starts_like_followup(text):
            topic = await self.gate.judge(text, best, in_thread=bool(also),
                                          refers_back=bool(also) and refers_back(text))
        protected = bool(await self.gate.protected(text)) if self.gate is not None else False
        verdict = classify_similarity(best, topic, protected=protected or bool(also),
                                      refuse_below=self.refuse_below, accept_above=self.accept_above)
        if also and verdict.route != "offtopic":
            best = best_score(await find(text, also))
        if verdict.route is not None:
            return Route(verdict.route, text, "prefilter", verdict.reason, best_score=best, also=list(also),
                         rewritten=bool(also))
        if model is not None:
            decided = await self.ask(reading, model, identity, span)
            if decided is not None:
                decided.best_score = best
                return decided
        # No model (or it failed): answer rather than refuse a message we are unsure about.
        return Route("knowledge", text, "heuristic", verdict.reason + "; default knowledge", best_score=best,
                     also=list(also), rewritten=bool(also))
