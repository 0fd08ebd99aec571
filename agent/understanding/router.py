"""The router model: it decides the cases the rules leave open.

Its structured output (`RouterDecision`) is built from the deployment's route names — the
capabilities' and the turn's own (agent/understanding/route.py) — so the model can only name a
route that exists; its choice becomes a typed `Route` there (`chosen`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field, create_model

from agent.messages import ChatMessage
from agent.prompts import PromptSet
from agent.providers.base import Model, ProviderError
from agent.tracing import NOOP, Span
from agent.understanding.route import TURN_ROUTES, Route, chosen

if TYPE_CHECKING:
    from agent.capabilities.base import Capability

log = logging.getLogger(__name__)


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
    """A capability the router model may choose, and when to choose it (the capability's words)."""

    capability: "Capability"

    @property
    def name(self) -> str:
        return self.capability.name

    @property
    def description(self) -> str:
        return self.capability.description


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
    return chosen(decision.route, {r.name: r.capability for r in routes}, query=query, text=text,
                  question=decision.clarification)
