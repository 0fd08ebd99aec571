"""The checks across a declaration's keys, each failing with the key it is about.

(Each key's own shape is checked by its pydantic model; these are the rules between keys: one
id and one name field, levels the gazetteer knows, templates naming declared fields…)
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from agent.registry.fields import (
    DaysField,
    FlagField,
    GeoField,
    HoursField,
    IdField,
    NameField,
    NumberField,
    PlaceField,
)
from agent.registry.template import names_in

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration

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
