"""What a tool is: an async function with a pydantic args model and a docstring.

The model sees `name`, the docstring and the JSON schema of the args model; the loop
validates arguments against the same model, so bad args become an error message for
the model instead of an exception.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from agent.references import Reference


class ToolResult(BaseModel):
    """What a tool returns. `text` goes back to the model; `references` feed the answer's
    sources; `documents` are the references of the `<document index=n>` blocks in `text`, in
    order (what an `[n]` citation points at); `weak_evidence` says none closely matches the
    query; `data` is what the tool found in its capability's own type (passages, records), read
    only by that capability. A failed tool returns only `text` (the error, for the model)."""

    text: str
    references: list[Reference] = Field(default_factory=list)
    documents: list[Reference] = Field(default_factory=list)
    weak_evidence: bool = False
    data: Any = None


ToolFn = Callable[[BaseModel], Awaitable[ToolResult]]


@dataclass
class Tool:
    name: str
    args_model: type[BaseModel]
    fn: ToolFn
    description: str = ""
    progress: str = "Working…"  # status line surfaces show while it runs

    def __post_init__(self) -> None:
        if not self.description:
            self.description = inspect.cleandoc(self.fn.__doc__ or "")

    def schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.args_model.model_json_schema()}

    async def __call__(self, raw_args: dict[str, Any]) -> ToolResult:
        args = self.args_model.model_validate(raw_args)
        return await self.fn(args)


class ToolError(Exception):
    """An error text meant for the model (unknown tool, bad args, failed tool)."""


@dataclass
class ToolRegistry:
    tools: dict[str, Tool] = field(default_factory=dict)

    def register(self, tool: Tool) -> Tool:
        self.tools[tool.name] = tool
        return tool

    def get(self, name: str) -> Tool:
        try:
            return self.tools[name]
        except KeyError:
            known = ", ".join(sorted(self.tools)) or "none"
            raise ToolError(f"Unknown tool {name!r}. Available tools: {known}.") from None

    def describe(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    async def run(self, name: str, raw_args: dict[str, Any]) -> ToolResult:
        """Run a tool; every failure comes back as a ToolResult the model can read."""
        try:
            tool = self.get(name)
            return await tool(raw_args)
        except ToolError as exc:
            return ToolResult(text=f"ERROR: {exc}")
        except ValidationError as exc:
            errs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}" for e in exc.errors())
            return ToolResult(text=f"ERROR: invalid arguments for {name}: {errs}")
        except Exception as exc:  # a tool bug or a store outage must not crash the turn
            return ToolResult(text=f"ERROR: tool {name} failed: {type(exc).__name__}: {exc}")
