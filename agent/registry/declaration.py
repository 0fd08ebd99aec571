"""A registry declared in YAML: its fields, words, display, command and tool (docs/registries.md).

`load_declaration(path)` validates the file; every problem is a `DeclarationError` whose one
line names the file and the key ("facility.yaml: fields.ages.values.infant.words: entry 2 …"),
so a broken declaration stops start-up with a message a non-programmer can act on.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent.registry.checks import check_declaration
from agent.registry.fields import (
    FIELD_TYPES,
    AnyField,
    DaysField,
    FlagField,
    GeoField,
    HoursField,
    IdField,
    NameField,
    NumberField,
    PlaceField,
    TagsField,
)
from agent.registry.template import Piece
from agent.yamlio import safe_load


class DeclarationError(ValueError):
    """A registry declaration cannot be used; the message names the file and the key."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Nouns(_Strict):
    singular: str  # "facility": "No facility matches…"
    plural: str  # "facilities": "Facilities: infant care · …", the `--json` list


class Gazetteer(_Strict):
    """Offline places: US zip codes with their city and county (the `zipcodes` package)."""

    country: str = "US"
    state: str | None = None  # two letters: the state whose cities and counties are known
    states: list[str] = Field(default_factory=list)  # or several
    state_names: list[str] = Field(default_factory=list)  # "Texas": ignored after a place ("Plano, Texas")

    @field_validator("country")
    @classmethod
    def _us_only(cls, value: str) -> str:
        if value.upper() != "US":
            raise ValueError("only US is shipped (offline zip codes); leave the gazetteer out for other countries")
        return "US"

    def all_states(self) -> list[str]:
        return [s.upper() for s in ([self.state] if self.state else []) + self.states]


class Words(_Strict):
    nouns: list[str] = Field(default_factory=list)  # words naming a record ("daycare"): a message is a search
    count_nouns: list[str] = Field(default_factory=list)  # "5 daycares" = show 5 (the plural is one already)
    filler: str = ""  # words that are never a name or a place, space-separated


class Display(_Strict):
    title: str | None = None  # the field shown as a record's title (default: the name field)
    line: list[Piece] = Field(default_factory=list)  # one line per record: the model's text, the terminal
    details: list[Piece] = Field(default_factory=list)  # the line under the title in Slack and Teams
    more: list[Piece] = Field(default_factory=list)  # extra lines of a single-record card
    url: str | None = None  # the field linked from a record
    description: list[Piece] = Field(default_factory=list)  # embedded for name search, joined with ". "


class CommandDeclaration(_Strict):
    name: str  # "/facility", "facility …" in Teams, `askdesk registry search`
    usage: str  # help for empty input or "help"
    example: str = ""
    extension: bool = True  # also a Teams message extension


class ToolDeclaration(_Strict):
    name: str  # "search_facilities"
    description: str  # what the model reads to choose it
    progress: str = "Searching…"  # status line while it runs
    arguments: str | None = None  # the arguments' description (default: "Search the … registry…")
    limit_ask: str | None = None  # the `limit` argument's description


class Declaration(_Strict):
    name: str  # the route and the eval section
    collection: str
    title: str  # what it searches, in a few words
    description: str  # when to choose it, for the router model
    record: Nouns
    reference: str | None = None  # a citation's section ("operation #{operation_number}")
    gazetteer: Gazetteer | None = None
    radius_miles: float = Field(10.0, gt=0, le=500)
    place_aliases: dict[str, str] = Field(default_factory=dict)  # nickname -> place name ("SA": San Antonio)
    words: Words = Field(default_factory=Words)
    fields: dict[str, AnyField]
    display: Display = Field(default_factory=Display)
    command: CommandDeclaration
    tool: ToolDeclaration
    json_fields: list[str] = Field(default_factory=list, alias="json")  # each record in `--json`
    path: Path | None = Field(None, exclude=True)  # where it was read from

    @field_validator("name")
    @classmethod
    def _route_name(cls, value: str) -> str:
        import re

        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", value):
            raise ValueError("use lower-case letters, digits, '_' or '-' (it is a route and a file name)")
        return value

    @field_validator("fields", mode="before")
    @classmethod
    def _short_types(cls, value):
        """`address: text` is `address: {type: text}`."""
        if isinstance(value, dict):
            return {k: ({"type": v} if isinstance(v, str) else v) for k, v in value.items()}
        return value

    @model_validator(mode="after")
    def _consistent(self) -> "Declaration":
        check_declaration(self)
        return self

    # --- the fields by role -----------------------------------------------------------------
    def of_type(self, kind: type) -> dict:
        return {n: f for n, f in self.fields.items() if isinstance(f, kind)}

    @property
    def id_field(self) -> str:
        return next(iter(self.of_type(IdField)))

    @property
    def name_field(self) -> str:
        return next(iter(self.of_type(NameField)))

    @property
    def places(self) -> dict[str, PlaceField]:
        return self.of_type(PlaceField)

    @property
    def tags(self) -> dict[str, TagsField]:
        return self.of_type(TagsField)

    @property
    def flags(self) -> dict[str, FlagField]:
        return self.of_type(FlagField)

    @property
    def numbers(self) -> dict[str, NumberField]:
        return self.of_type(NumberField)

    def one(self, kind: type) -> tuple[str, object] | None:
        found = self.of_type(kind)
        return next(iter(found.items())) if found else None

    @property
    def hours(self) -> tuple[str, HoursField] | None:
        return self.one(HoursField)  # type: ignore[return-value]

    @property
    def days(self) -> tuple[str, DaysField] | None:
        return self.one(DaysField)  # type: ignore[return-value]

    @property
    def geo(self) -> tuple[str, GeoField] | None:
        return self.one(GeoField)  # type: ignore[return-value]

    def column(self, name: str) -> str:
        return self.fields[name].column or name


def _loc(loc: tuple) -> str:
    parts = [str(p) for p in loc]
    if len(parts) > 2 and parts[0] == "fields" and parts[2] in FIELD_TYPES:
        del parts[2]  # the `type` tag pydantic puts in the path
    return ".".join(parts) or "(top level)"


def parse_declaration(data: object, source: str) -> Declaration:
    if not isinstance(data, dict):
        raise DeclarationError(f"{source}: expected a mapping (name, collection, fields, …)")
    try:
        return Declaration.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        first = errors[0]
        msg = str(first["msg"]).removeprefix("Value error, ")
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise DeclarationError(f"{source}: {_loc(first['loc'])}: {msg}{more}") from None


def load_declaration(path: Path | str) -> Declaration:
    path = Path(path)
    try:
        data = safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeclarationError(f"{path}: cannot read the registry declaration ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        raise DeclarationError(f"{path}: invalid YAML{where}: {getattr(exc, 'problem', exc)}") from None
    declaration = parse_declaration(data, str(path))
    declaration.path = path
    return declaration
