"""What a capability contributes to askdesk, and the shapes it hands to the turn and to surfaces.

A capability is one body of the organisation's data askdesk can answer from: the knowledge
base, or one declared registry (offices, equipment, services, contacts...). It brings its tools, the
words that tell the pre-filter a message is for it, the search run before the first model call
(prefetch), its answer when no model is configured (search-only), its commands (slash command,
Teams message extension, CLI) and its eval sections. The turn pipeline and the surfaces know
only these shapes: a route name is a capability's name, and what a capability found travels
as `Found.result.data`, read by that capability alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agent.references import Reference

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.tools.base import Tool, ToolResult


@dataclass
class Found:
    """One search a turn ran before (or instead of) the model: which capability and tool, with
    which arguments, and the tool's result (text for the model, references, `data`)."""

    capability: str
    tool: str
    arguments: dict[str, Any]
    result: "ToolResult"
    query: str = ""  # the routed query the arguments were built from


@dataclass(frozen=True)
class Command:
    """A command a capability offers on every surface: `/NAME text` in Slack, `NAME text` typed
    to the bot and the compose-box search (message extension) in Teams, `askdesk NAME text`."""

    name: str  # "office": `/office` in Slack
    capability: str  # the capability that runs it
    title: str  # what it searches, in a few words ("the company's office locations")
    usage: str  # help text shown for empty/"help" input (plain text; `/NAME` written as such)
    example: str = ""  # one example query ("parking in Austin")
    extension: bool = True  # also offered as a Teams message extension
    record: str = "record"  # what one result is called ("office")
    records: str = "records"  # ...and several ("offices")

    def help(self, prefix: str = "/") -> str:
        """The usage text, with the command written as the surface types it ("/office",
        "office" in Teams, "askdesk registry search office" in a terminal)."""
        return self.usage.replace(f"/{self.name}", f"{prefix}{self.name}")


class Detail(BaseModel):
    """One piece of a record's details line; `icon` is a hint a surface may draw ("phone")."""

    text: str
    icon: str | None = None


class RecordView(BaseModel):
    """How a surface shows one registry record, whatever the registry: a title, one details
    line (pieces joined with " · "), extra lines for a single-record card, a link."""

    id: str
    title: str
    details: list[Detail] = Field(default_factory=list)
    more: list[Detail] = Field(default_factory=list)  # e.g. "Hours: 7-6", a record number
    url: str | None = None

    def details_line(self, icons: dict[str, str] | None = None) -> str:
        icons = icons or {}
        parts = [f"{icons[d.icon]} {d.text}" if d.icon in icons else d.text for d in self.details]
        return " · ".join(p for p in parts if p)


class CommandResult(BaseModel):
    """What a command returns to every surface: how the text was understood, the records, the
    plain-text reply (terminal) and the `--json` shape (the capability's own)."""

    command: str
    text: str  # the request as typed
    summary: str = ""  # how it was understood ("parking · within 10 mi of Austin")
    notes: list[str] = Field(default_factory=list)  # corrections, "no match", "not loaded"...
    is_help: bool = False
    reply: str = ""  # plain text: the terminal's output, Slack's fallback text
    records: list[RecordView] = Field(default_factory=list)
    total: int = 0  # matches before the display limit
    json_data: dict[str, Any] = Field(default_factory=dict)  # `--json`

    def to_json(self) -> dict[str, Any]:
        return self.json_data


class SearchOnly(BaseModel):
    """A capability's answer from what it found, without a model."""

    text: str
    references: list[Reference] = Field(default_factory=list)


class EvalSection(Protocol):
    """One section of an eval YAML a capability scores (`askdesk eval`)."""

    async def evaluate(self, items: list[dict], service: Any) -> dict[str, Any]: ...

    def render(self, result: dict[str, Any]) -> str: ...


CapabilityKind = Literal["knowledge", "registry"]


@runtime_checkable
class Capability(Protocol):
    """The plug-in interface. `name` is the route name (and the eval section of a registry)."""

    name: str
    kind: CapabilityKind
    description: str  # when to choose it, for the router model ("looking for an office by city...")

    def tools(self) -> list["Tool"]:
        """What the agent may call."""

    def claims(self, text: str) -> bool:
        """The wording alone makes `text` a search of this capability (the pre-filter's rule;
        the understanding layer vetoes messages that ask about amounts or rules)."""

    def anchored(self, text: str) -> bool:
        """`text` names what a search of this capability is anchored on (a registry: a place,
        distance, number or hours). A claim without one stands only when the capability's
        reading places every word of the message."""

    async def warm(self) -> None:
        """Load what its first question needs (statistics, places) before the process reports
        ready, so no user waits for a cold cache."""

    async def unplaced(self, text: str) -> str:
        """The words of a message this capability claimed that its own reading could not place
        (a registry: what its parser left over); the understanding layer asks whether the
        documents know them, to tell a question about rules from a search."""

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found | None:
        """The search run for a message routed here before the first model call (None: none).
        `model` (the router model, its calls counted by the turn) may read what rules cannot."""

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly:
        """The answer without a model, from what `prefetch` found."""

    def commands(self) -> list[Command]: ...

    async def run_command(self, name: str, text: str, *, model: "Model | None" = None) -> CommandResult: ...

    def eval_sections(self) -> dict[str, EvalSection]: ...


@dataclass
class Capabilities:
    """The capabilities of one deployment, by name, in routing order (knowledge first)."""

    items: list[Capability] = field(default_factory=list)

    def __iter__(self):
        return iter(self.items)

    def get(self, name: str) -> Capability | None:
        return next((c for c in self.items if c.name == name), None)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.items]

    def registries(self) -> list[Capability]:
        return [c for c in self.items if c.kind == "registry"]

    def command(self, name: str) -> tuple[Capability, Command] | None:
        for capability in self.items:
            for command in capability.commands():
                if command.name == name:
                    return capability, command
        return None
