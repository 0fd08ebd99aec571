"""The default tool registry: every tool module under agent/tools that exposes make_tool().

A new tool is one module with `make_tool(runtime, **options) -> Tool` plus a line in
TOOL_MODULES. A module that cannot be imported (an optional feature not installed) is
skipped with a log line, so the other tools keep working.
"""

from __future__ import annotations

import importlib
import inspect
import logging
from typing import TYPE_CHECKING

from agent.tools.base import ToolRegistry

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

TOOL_MODULES = ["agent.tools.formatted_context", "agent.tools.search_facilities"]


def build_registry(runtime: "Runtime", *, collection: str | None = None, modules: list[str] | None = None) -> ToolRegistry:
    """Tools bound to `runtime`; `collection` overrides the knowledge collection (per Slack channel)."""
    registry = ToolRegistry()
    for name in modules or TOOL_MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError as exc:
            log.warning("tool module %s unavailable: %s", name, exc)
            continue
        make_tool = getattr(module, "make_tool", None)
        if make_tool is None:
            log.warning("tool module %s has no make_tool()", name)
            continue
        kwargs = {}
        if collection is not None and "collection" in inspect.signature(make_tool).parameters:
            kwargs["collection"] = collection
        registry.register(make_tool(runtime, **kwargs))
    return registry
