"""What a tool is: an async function with a pydantic args model and a docstring.

The model sees `name`, the docstring and the JSON schema of the args model; the loop
validates arguments against the same model, so bad args become an error message for
the model instead of an exception.

A tool that changes something (sends, books, files, deletes) says so: `reads_only=False`. It
never runs unless handed the asker's `Confirmed` call for exactly these arguments, which only
agent/tools/actions.py makes, after the asker confirmed what they were shown; so a prefetch, a
capability or the loop cannot run it by mistake.
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

CHANGES_NOTE = "(Changes something: it runs only after the asker confirms.)"  # told to the model


@dataclass(frozen=True)
class Confirmed:
    """The asker confirmed this call with exactly these arguments (agent/tools/actions.py)."""

    tool: str
    arguments: dict[str, Any]


class ConfirmationRequired(Exception):
    """A changing tool was called without the asker's confirmation of exactly this call."""

    def __init__(self, tool: str) -> None:
        super().__init__(f"{tool} changes something and runs only after the asker confirms")
        self.tool = tool


@dataclass
class Tool:
    name: str
    args_model: type[BaseModel]
    fn: ToolFn
    description: str = ""
    progress: str = "Working…"  # status line surfaces show while it runs
    reads_only: bool = True  # False: it changes something, and runs only once the asker confirms

    def __post_init__(self) -> None:
        if not self.description:
            self.description = inspect.cleandoc(self.fn.__doc__ or "")

    def schema(self) -> dict[str, Any]:
        description = self.description
        if not self.reads_only and CHANGES_NOTE not in description:
            description = f"{description} {CHANGES_NOTE}".strip()
        return {"name": self.name, "description": description, "parameters": self.args_model.model_json_schema()}

    def signature(self) -> str:
        """`lookup(query: string, required; limit: integer)`: what the model is told exists
        after a call it got wrong (only then: schema generation is not free)."""
        schema = self.args_model.model_json_schema()
        required = set(schema.get("required", []))
        args = []
        for name, prop in schema.get("properties", {}).items():
            kind = prop.get("type") or "/".join(str(p.get("type", "object")) for p in prop.get("anyOf", [])) or "value"
            args.append(f"{name}: {kind}{', required' if name in required else ''}")
        return f"{self.name}({'; '.join(args)})"

    async def __call__(self, raw_args: dict[str, Any], *, confirmed: Confirmed | None = None) -> ToolResult:
        """Run it; a changing tool only with `confirmed` naming this very call (else
        ConfirmationRequired, and nothing runs)."""
        args = self.args_model.model_validate(raw_args)
        if not self.reads_only and confirmed != Confirmed(self.name, dict(raw_args)):
            raise ConfirmationRequired(self.name)
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
            known = "; ".join(t.signature() for t in self.tools.values()) or "none"
            raise ToolError(f"Unknown tool {name!r}. Available tools: {known}.") from None

    def describe(self) -> list[dict[str, Any]]:
        return [t.schema() for t in self.tools.values()]

    def changes(self, name: str) -> bool:
        """Whether the tool called `name` changes something (its calls wait for the asker)."""
        tool = self.tools.get(name)
        return tool is not None and not tool.reads_only

    def problem(self, name: str, raw_args: dict[str, Any]) -> str | None:
        """What makes a call the model's mistake (an unknown tool, arguments its schema rejects),
        said for the model with what does exist; None: the call can run."""
        try:
            tool = self.get(name)
            tool.args_model.model_validate(raw_args)
        except ToolError as exc:
            return str(exc)
        except ValidationError as exc:
            return _invalid(tool, exc)
        return None

    async def run(self, name: str, raw_args: dict[str, Any], *, confirmed: Confirmed | None = None) -> ToolResult:
        """Run a tool; every failure comes back as a ToolResult the model can read."""
        try:
            tool = self.get(name)
        except ToolError as exc:
            return ToolResult(text=f"ERROR: {exc}")
        try:
            return await tool(raw_args, confirmed=confirmed)
        except ConfirmationRequired as exc:
            return ToolResult(text=f"NOT RUN: {exc}. Nothing was changed.")
        except ValidationError as exc:
            return ToolResult(text=f"ERROR: {_invalid(tool, exc)}")
        except Exception as exc:  # a tool bug or a store outage must not crash the turn
            return ToolResult(text=f"ERROR: tool {name} failed: {type(exc).__name__}: {exc}")


def _invalid(tool: Tool, exc: ValidationError) -> str:
    errs = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'args'}: {e['msg']}"
                     for e in exc.errors(include_url=False, include_input=False))
    return f"invalid arguments for {tool.name}: {errs}. Expected: {tool.signature()}."
