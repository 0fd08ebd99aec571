"""What a capability contributes to askdesk, and the shapes it hands to the turn and to surfaces.

A capability is one body of the organisation's data askdesk can answer from: the knowledge
base, or one declared registry (offices, equipment, services, contacts...). It brings its tools, the
words that tell the pre-filter a message is for it, the search run before the first model call
(prefetch), its answer when no model is configured (search-only), its commands (slash command,
Teams message extension, CLI) and its eval sections. The turn pipeline and the surfaces know
only these shapes: a route name is a capability's name, and what a capability found travels
as `Found.result.data`, read by that capability alone.

`Capability` is the base class: `name`, `description` and `tools()` are required, every other
member has a default that does nothing. Capabilities are plug-ins (agent/plugins.py): askdesk's
own knowledge base and registries register the way a third party's capability does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from agent.references import Reference

if TYPE_CHECKING:
    from agent.accents import Cue
    from agent.config import Settings
    from agent.knowledge.vocabulary import Vocabulary
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.runtime import Runtime
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
    # how close in meaning each line of what was found is to `query` (a line's text: its cosine),
    # filled by the capability's `read_closely` before a search-only answer; empty: not read
    closeness: dict[str, float] = field(default_factory=dict)
    # `query` as its lines were read (Vietnamese typed without marks: with them written back, as
    # search reads it); empty: not read
    read_as: str = ""


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


class Capability:
    """Base class of a capability (a plug-in registers its subclass: `r.capability(cls)`).

    Required: `name` (the route name), `description` (when the router model should choose it)
    and `tools()`. Everything else has a default that does nothing, so a capability adds only
    what it has, as pydantic-ai's capabilities do: it claims no message by its wording, searches
    nothing before the first model call, answers search-only with what its tool returned, offers
    no command, warms nothing, has no vocabulary and no eval section.
    """

    name: str = ""
    # an open label: "knowledge" (chosen by meaning), "registry" (a declared table, claimed by
    # its wording), or whatever a plug-in calls its own; nothing in the turn branches on it
    kind: str = "capability"
    description: str = ""  # for the router model ("looking for an office by city...")
    # a quick necessary condition of `claims` (agent/accents.py): a message without it is not
    # offered to `claims` at all (None: every message is)
    cue: "Cue | None" = None
    # a request for its records by their noun ("which clinics have…", agent/asking.py): a search of
    # it whatever else the message says (None: it has no records)
    records_cue: "Cue | None" = None

    def __init__(self, runtime: "Runtime | None" = None) -> None:
        self.runtime = runtime

    @classmethod
    def build(cls, runtime: "Runtime | None", settings: "Settings") -> list["Capability"]:
        """The deployment's capabilities of this plug-in, built once per service: one by default,
        several for a factory (one per declared registry), none when it is not configured."""
        return [cls(runtime)]

    @classmethod
    def env_variables(cls) -> list[str]:
        """The environment variables it reads (`askdesk plugins` lists them)."""
        return []

    @classmethod
    def missing_env(cls) -> list[str]:
        """Required variables that are not set (`askdesk plugins` shows them)."""
        return []

    def tools(self) -> list["Tool"]:
        """What the agent may call. A tool that changes something says so (`reads_only=False`):
        it runs only after the asker confirms (agent/tools/actions.py)."""
        raise NotImplementedError(f"{type(self).__name__} must return its tools")

    def bound(self, collection: str | None) -> "Capability":
        """This capability for turns on knowledge `collection` (a Slack channel's own); the same
        object unless it reads a collection."""
        return self

    def claims(self, text: str) -> bool:
        """The wording alone makes `text` a search of this capability (the pre-filter's rule;
        the understanding layer vetoes messages that ask about amounts or rules)."""
        return False

    def anchored(self, text: str) -> bool:
        """`text` names what a search of this capability is anchored on (a registry: a place,
        distance, number or hours). A claim without one stands only when the capability's
        reading places every word of the message."""
        return True

    async def unplaced(self, text: str) -> str:
        """The words of a message this capability claimed that its own reading could not place
        (a registry: what its parser left over); the understanding layer asks whether the
        documents know them, to tell a question about rules from a search."""
        return ""

    async def warm(self) -> None:
        """Load what its first question needs (statistics, places) before the process reports
        ready, so no user waits for a cold cache."""

    async def vocabulary(self) -> "Vocabulary | None":
        """The words and codes its documents use (the knowledge base's), for the understanding
        layer; None: it has none."""
        return None

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found | None:
        """The search run for a message routed here before the first model call (None: none).
        `model` (the router model, its calls counted by the turn) may read what rules cannot.
        Only tools that read run here: a changing tool refuses to run unconfirmed."""
        return None

    async def read_closely(self, found: Found) -> Found:
        """`found`, read more closely before a search-only answer is written from it (the
        knowledge base weighs the lines it may quote by meaning: `Found.closeness`); by default
        as it is."""
        return found

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly | None:
        """The answer without a model, from what `prefetch` found; None: what the tool returned
        is the answer (`answer_without_model`)."""
        return None

    def commands(self) -> list[Command]:
        """A slash command, a Teams message extension and its CLI form."""
        return []

    async def run_command(self, name: str, text: str, *, model: "Model | None" = None) -> CommandResult:
        raise KeyError(name)

    def eval_sections(self) -> dict[str, EvalSection]:
        """The sections of an eval YAML it scores (`askdesk eval`)."""
        return {}


def answer_without_model(capability: Capability | None, found: Found | None, prompts: "PromptSet") -> SearchOnly:
    """The capability's search-only answer, or else what its tool returned (with its sources),
    or else that nothing was found."""
    shown = capability.search_only(found, prompts) if capability is not None else None
    if shown is not None:
        return shown
    if found is None or not found.result.text.strip():
        return SearchOnly(text=prompts.render("search_only_empty"))
    return SearchOnly(text=found.result.text.strip(), references=list(found.result.references))


@dataclass
class Capabilities:
    """The capabilities of one deployment, by name, in routing order (knowledge first)."""

    items: list[Capability] = field(default_factory=list)

    @classmethod
    def ordered(cls, items: Iterable[Capability]) -> "Capabilities":
        """Knowledge first (what no other claims is the documents'), then the rest as given."""
        items = list(items)
        return cls([c for c in items if c.kind == "knowledge"] + [c for c in items if c.kind != "knowledge"])

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
