"""The search tool of one declared registry (`search_facilities` for the demo's): its name,
description, progress line and arguments all come from the registry's declaration."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.fencing import quote
from agent.tools.base import Tool, ToolResult

if TYPE_CHECKING:
    from pydantic import BaseModel

    from agent.registry.registry import Registry


def make_registry_tool(registry: "Registry") -> Tool:
    """`ToolResult.data` is the search's `RegistryResults`; references cite each record."""

    async def search(args: "BaseModel") -> ToolResult:
        results = await registry.search(args)
        references = [registry.views.reference(hit) for hit in results.hits]
        return ToolResult(text=quote(results.text), references=references, data=results)

    tool = registry.decl.tool
    return Tool(name=tool.name, args_model=registry.args_model, fn=search, description=tool.description,
                progress=tool.progress)
