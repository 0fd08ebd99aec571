"""The route of a message, and the router model that decides the cases the rules leave open.

Routes are the deployment's capabilities ("knowledge", each registry's name) plus three of the
turn's own: offtopic (refusal), smalltalk (greeting) and clarify. For a capability the route
carries a self-contained search query (a follow-up rewritten with its thread). The router
model's structured output (`RouterDecision`) is built from the deployment's route names, so
the model can only name a route that exists.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from agent.messages import ChatMessage
from agent.prompts import PromptSet
from agent.providers.base import Model, ProviderError
from agent.tracing import NOOP, Span

log = logging.getLogger(__name__)

TURN_ROUTES = ("smalltalk", "clarify", "offtopic")  # answered by the turn itself, no capability


@dataclass
class Route:
    name: str  # a capability's name, or one of TURN_ROUTES
    query: str
    decided_by: str  # prefilter | model | heuristic
    reason: str = ""
    rewritten: bool = False
    clarification: str | None = None
    best_score: float | None = None  # the best similarity of the message to the knowledge base
    borderline: bool = False  # answered without a model though it may be outside the documents
    also: list[tuple[str, float]] = field(default_factory=list)  # searches fused with `query`

    @property
    def searched(self) -> str:
        """The query the documents were searched with (a message in its thread: that search)."""
        return self.also[0][0] if self.also else self.query


def describe(route: Route) -> dict[str, Any]:
    """Trace/JSON view of a routing decision (no message text)."""
    return {"route": route.name, "decided_by": route.decided_by, "reason": route.reason,
            "rewritten": route.rewritten, "best_score": route.best_score, "fused_searches": 1 + len(route.also),
            "borderline": route.borderline}


@lru_cache(maxsize=16)
def router_decision(routes: tuple[str, ...]) -> type[BaseModel]:
    """The router model's response model for these route names."""
    names = tuple(dict.fromkeys((*routes, *TURN_ROUTES)))
    return create_model(
        "RouterDecision",
        __doc__="How to handle one message.",
        route=(Literal[names], Field(description=" | ".join(names))),  # type: ignore[valid-type]
        search_query=(str | None, Field(
            None, description="Self-contained search query (follow-ups rewritten with the thread); "
                              "for a search route only.")),
        clarification=(str | None, Field(None, description="For clarify: one short question to ask the user.")),
    )


@dataclass(frozen=True)
class RouteOption:
    name: str
    description: str  # when to choose it (the capability's words)


async def ask_router(model: Model, prompts: PromptSet, *, text: str, history: list[ChatMessage], domain: str,
                     capabilities: str, routes: tuple[RouteOption, ...], span: Span = NOOP,
                     titles: list[str] | None = None) -> Route | None:
    """The router model's route for `text`, or None when it failed (the rules route then).
    `titles`: what the documents nearest the message are about, so the model can tell a
    terse on-topic question from small talk."""
    prompt = prompts.render(
        "router", domain=domain, capabilities=capabilities, titles=list(titles or []),
        routes=[{"name": r.name, "description": r.description} for r in routes],
        history=[{"role": m.role, "content": m.content} for m in history if m.role in ("user", "assistant")],
        message=text,
    )
    messages = [ChatMessage(role="user", content=prompt)]
    child = span.child("router model", "llm", {"messages": [m.model_dump() for m in messages]})
    try:
        completion = await model.complete(messages, router_decision(tuple(r.name for r in routes)))
    except ProviderError as exc:
        # The router is an optimisation: when it fails, the pre-filter heuristics still route.
        log.warning("router model failed (%s); using the pre-filter heuristics", type(exc).__name__)
        child.end(error=str(exc))
        return None
    decision = completion.output
    child.end({"route": decision.route, "search_query": decision.search_query, "usage": completion.usage.model_dump()})
    query = (decision.search_query or "").strip() or text
    return Route(decision.route, query, "model", "router model", rewritten=query != text,
                 clarification=decision.clarification)
