"""Prefetch: the tool result the agent starts with, chosen by the route.

A table maps a route to the tool that answers it and a function building that tool's
arguments from the routed query; the tool runs through the registry like any other call,
so the agent's first prompt holds its result and a plain answer needs one model call.
A new prefetch is one row. Errors propagate (a knowledge-base outage is the service's to
report), unlike a model's tool call whose errors go back to the model as text.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from agent.facilities.query_parser import parse_with_registry
from agent.loop import Prefetched, ProgressFn
from agent.runtime import Runtime
from agent.steps import RouteName
from agent.tools.base import ToolRegistry, ToolResult
from agent.tools.formatted_context import MAX_TOP_K
from agent.tracing import NOOP, Span

log = logging.getLogger(__name__)

ArgumentsFn = Callable[[Runtime, str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class PrefetchRule:
    tool: str  # registry name of the tool to run
    arguments: ArgumentsFn  # (runtime, routed query) -> the tool's arguments


async def knowledge_arguments(runtime: Runtime, query: str) -> dict[str, Any]:
    return {"query": query, "top_k": min(runtime.settings.top_k, MAX_TOP_K)}


async def facility_arguments(runtime: Runtime, query: str) -> dict[str, Any]:
    """The /facility parser's reading of the query; the raw query when it cannot parse."""
    try:
        parsed = await parse_with_registry(runtime, query)
        return parsed.args.model_dump(exclude_none=True, exclude_defaults=True)
    except Exception as exc:  # e.g. the registry is not loaded: the tool says so itself
        log.warning("facility query parse failed: %s", type(exc).__name__)
        return {"query": query}


PREFETCH: dict[RouteName, PrefetchRule] = {
    "knowledge": PrefetchRule("get_formatted_context", knowledge_arguments),
    "facility": PrefetchRule("search_facilities", facility_arguments),
}


@dataclass
class Prefetcher:
    """Runs the route's prefetch rule with one runtime and tool registry."""

    runtime: Runtime
    registry: ToolRegistry

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
        arguments = await rule.arguments(self.runtime, query)
        if done is not None:
            return [Prefetched(rule.tool, arguments, done)]
        child = span.child(f"tool:{rule.tool}", "tool", {"arguments": arguments})
        try:
            result = await tool(arguments)
        except Exception as exc:
            child.end(error=type(exc).__name__)
            raise
        child.end({"text": result.text, "references": len(result.references), "weak_evidence": result.weak_evidence})
        return [Prefetched(rule.tool, arguments, result)]
