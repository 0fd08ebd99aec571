"""Prefetch: the tool result the agent starts with, chosen by the route.

A table maps a route to the tool that answers it and a function building that tool's
arguments from the routed query; the tool runs through the registry like any other call,
so the agent's first prompt holds its result and a plain answer needs one model call.
A new prefetch is one row. With a router model, a facility query whose words the parser could
not all place gets one extraction call (agent/facilities/extraction.py), counted in the
result's `llm_calls`; without one the route stays model-free. Errors propagate (a knowledge-base outage is the service's to
report), unlike a model's tool call whose errors go back to the model as text.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.facilities.extraction import fill_unplaced
from agent.facilities.query_parser import parse_with_registry
from agent.knowledge.search import KnowledgeBaseUnavailable
from agent.turn.loop import Prefetched, ProgressFn
from agent.prompts import PromptSet
from agent.providers.base import Model
from agent.runtime import Runtime
from agent.turn.steps import RouteName
from agent.tools.base import ToolRegistry, ToolResult
from agent.tools.formatted_context import MAX_TOP_K, get_formatted_context
from agent.tracing import NOOP, Span

log = logging.getLogger(__name__)

Arguments = tuple[dict[str, Any], int]  # the tool's arguments, model calls made to build them
ArgumentsFn = Callable[["Prefetcher", str], Awaitable[Arguments]]


@dataclass(frozen=True)
class PrefetchRule:
    tool: str  # registry name of the tool to run
    arguments: ArgumentsFn  # (prefetcher, routed query) -> the tool's arguments, model calls


async def knowledge_arguments(prefetcher: Prefetcher, query: str) -> Arguments:
    return {"query": query, "top_k": min(prefetcher.runtime.settings.top_k, MAX_TOP_K)}, 0


async def facility_arguments(prefetcher: Prefetcher, query: str) -> Arguments:
    """The /facility parser's reading of the query (its unplaced words read by the router model,
    when one is configured); the raw query when it cannot parse."""
    try:
        parsed = await parse_with_registry(prefetcher.runtime, query)
    except Exception as exc:  # e.g. the registry is not loaded: the tool says so itself
        log.warning("facility query parse failed: %s", type(exc).__name__)
        return {"query": query}, 0
    calls = 1 if prefetcher.model is not None and parsed.leftover.strip() else 0
    parsed = await fill_unplaced(prefetcher.model, query, parsed, prefetcher.prompts)
    return parsed.args.model_dump(exclude_none=True, exclude_defaults=True), calls


PREFETCH: dict[RouteName, PrefetchRule] = {
    "knowledge": PrefetchRule("get_formatted_context", knowledge_arguments),
    "facility": PrefetchRule("search_facilities", facility_arguments),
}


@dataclass
class Prefetcher:
    """Runs the route's prefetch rule with one runtime and tool registry."""

    runtime: Runtime
    registry: ToolRegistry
    model: Model | None = None  # the router model: reads what the facility parser could not place
    prompts: PromptSet | None = None
    collection: str | None = None  # the knowledge collection the registry searches

    async def similar(self, query: str, also: list[tuple[str, float]] | tuple = (), *,
                      span: Span = NOOP) -> ToolResult | None:
        """The router's similarity search (None when the knowledge base is down); with `also`,
        fused with those (query, weight) searches (a message in its thread: agent/knowledge/fused.py)."""
        try:
            if also:
                child = span.child("tool:get_formatted_context", "tool", {"query": query, "also": list(also)})
                result = await get_formatted_context(self.runtime, query, min(self.runtime.settings.top_k, MAX_TOP_K),
                                                     collection=self.collection, also=also)
                child.end({"text": result.text, "references": len(result.references)})
                return result
            found = await self.run("knowledge", query, span=span)
        except KnowledgeBaseUnavailable as exc:
            log.warning("knowledge base unavailable during routing: %s", type(exc).__name__)
            return None
        return found[0].result if found else None

    def rule(self, route: RouteName) -> PrefetchRule | None:
        rule = PREFETCH.get(route)
        return rule if rule is not None and rule.tool in self.registry.tools else None

    async def run(self, route: RouteName, query: str, *, span: Span = NOOP, progress: ProgressFn | None = None,
                  done: ToolResult | None = None) -> list[Prefetched]:
        """The prefetched result for `route` ([] when it has none); `done` is a result the
        router already retrieved for the same query (its similarity search)."""
        rule = self.rule(route)
        if rule is None:
            return []
        tool = self.registry.get(rule.tool)
        if progress is not None:
            await progress(tool.progress)
        arguments, calls = await rule.arguments(self, query)
        if done is not None:
            return [Prefetched(rule.tool, arguments, done, calls)]
        child = span.child(f"tool:{rule.tool}", "tool", {"arguments": arguments})
        try:
            result = await tool(arguments)
        except Exception as exc:
            child.end(error=type(exc).__name__)
            raise
        child.end({"text": result.text, "references": len(result.references), "weak_evidence": result.weak_evidence})
        return [Prefetched(rule.tool, arguments, result, calls)]
