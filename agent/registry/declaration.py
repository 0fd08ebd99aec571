"""A registry declared in YAML: its fields, words, display, command and tool (docs/registries.md).

`load_declaration(path)` validates the file; every problem is a `DeclarationError` whose one
line names the file and the key ("facility.yaml: fields.ages.values.infant.words: entry 2 …"),
so a broken declaration stops start-up with a message a non-programmer can act on.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

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
from agent.registry.template import Piece, names_in
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


# --------------------------------------------------------------------------- the checks across keys
# Each key's own shape is checked by its pydantic model; these are the rules between keys, each
# failing with the key it is about: one id and one name field, levels the gazetteer knows,
# templates naming declared fields…

GAZETTEER_LEVELS = ("city", "county", "zip")
CODE_LEVELS = ("zip",)
BUILT_INS = ("distance", "flags", "flag_names")  # template names every registry has
RESERVED = ("source", "features", "description", "content_hash", "extra", "open_minutes", "close_minutes",
            "query", "near", "radius_miles", "limit", "open_at", "open_until", *BUILT_INS)
_IDENT = re.compile(r"[a-z_][a-z0-9_]{0,63}")


def _fail(key: str, message: str) -> None:
    raise ValueError(f"{key}: {message}")


def _count(decl: "Declaration", kind: type, label: str, *, exactly: bool) -> None:
    found = [n for n, f in decl.fields.items() if isinstance(f, kind)]
    if exactly and len(found) != 1:
        _fail("fields", f"declare exactly one field of type {label} (found {len(found)}: {found or 'none'})")
    if not exactly and len(found) > 1:
        _fail("fields", f"at most one field of type {label} (found {found})")


def _check_fields(decl: "Declaration") -> None:
    _count(decl, IdField, "id", exactly=True)
    _count(decl, NameField, "name", exactly=True)
    for kind, label in ((HoursField, "hours"), (DaysField, "days"), (GeoField, "geo")):
        _count(decl, kind, label, exactly=False)
    arguments: set[str] = set()
    for name, field in decl.fields.items():
        if not _IDENT.fullmatch(name):
            _fail(f"fields.{name}", "a field name is lower-case letters, digits and '_'")
        if name in RESERVED and not (name == "days" and isinstance(field, DaysField)):
            _fail(f"fields.{name}", f"'{name}' is a name the engine uses; call the field something else")
        if isinstance(field, NumberField):
            for prefix in ("min", "max"):
                arguments.add(f"{prefix}_{name}")
        if isinstance(field, FlagField) and field.words and not field.ask:
            _fail(f"fields.{name}.words", "a flag the parser reads must be a filter: give it an `ask`")
    clash = arguments & set(decl.fields)
    if clash:
        _fail("fields", f"{sorted(clash)} clash with the number filters' argument names")


def _check_places(decl: "Declaration") -> None:
    levels: dict[str, str] = {}
    keys = set(decl.fields)
    for name, field in decl.fields.items():
        if not isinstance(field, PlaceField):
            continue
        where = f"fields.{name}"
        if field.level is not None:
            if decl.gazetteer is None:
                _fail(f"{where}.level", "a level needs a `gazetteer` (or leave `level` out)")
            if field.level not in GAZETTEER_LEVELS:
                _fail(f"{where}.level", f"unknown level {field.level!r} (known: {', '.join(GAZETTEER_LEVELS)})")
            if field.level in levels:
                _fail(f"{where}.level", f"level {field.level!r} is already the field {levels[field.level]!r}")
            levels[field.level] = name
            if field.level not in CODE_LEVELS and not decl.gazetteer.all_states():  # type: ignore[union-attr]
                _fail("gazetteer.state", f"the {field.level} level needs the state(s) whose places to know")
        if field.around and decl.geo is None:
            _fail(f"{where}.around", "searching around a place needs a `geo` field (the records' points)")
        if field.suffix and field.level in CODE_LEVELS:
            _fail(f"{where}.suffix", "a code (zip) has no suffix word")
        key = field.key or f"{name}_key"
        if key in keys or key in RESERVED:
            _fail(f"{where}.key", f"payload key {key!r} is taken")
        keys.add(key)


def _check_templates(decl: "Declaration") -> None:
    known = set(decl.fields) | set(BUILT_INS)

    def check(key: str, template: str) -> None:
        for name in names_in(template):
            if name not in known:
                _fail(key, f"{{{name}}} is not a field (known: {', '.join(sorted(known))})")

    display = decl.display
    for part in ("line", "details", "more", "description"):
        for i, piece in enumerate(getattr(display, part)):
            for template in piece.templates():
                check(f"display.{part}.{i + 1}", template)
    for key in ("title", "url"):
        value = getattr(display, key)
        if value is not None and value not in decl.fields:
            _fail(f"display.{key}", f"{value!r} is not a field")
    if decl.reference:
        check("reference", decl.reference)
    for name in decl.json_fields:
        if name not in decl.fields:
            _fail("json", f"{name!r} is not a field")


def check_declaration(decl: "Declaration") -> None:
    _check_fields(decl)
    _check_places(decl)
    _check_templates(decl)
    if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", decl.command.name):
        _fail("command.name", "use lower-case letters, digits, '_' or '-'")
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", decl.tool.name):
        _fail("tool.name", "use letters, digits, '_' or '-' (at most 64)")
    if not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}", decl.collection):
        _fail("collection", "use letters, digits, '_' or '-' (at most 64)")
    for alias, target in decl.place_aliases.items():
        if not str(alias).strip() or not str(target).strip():
            _fail("place_aliases", "a nickname and its place are both needed")
