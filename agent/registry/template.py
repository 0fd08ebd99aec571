"""The display templates of a declaration: `{field}`, `{field|filter}`, `{field:.1f}`.

A piece of a line ("ages {ages|join(/)}") is left out when every field it names is empty
(no value, an empty list), or shows its `default` instead; `parts` are sub-templates joined
with `sep`, the empty ones skipped ("{address}", "{city|title}", "{zip}" -> "1 Main St,
Austin, 78702"). Lists are joined with ", " unless a `join(sep)` filter says otherwise.
Filters: title (each word capitalised), proper (a name written in capitals in title case,
other text as written), lower, upper, join(sep), labels (a tags field's values by their labels).
"""

from __future__ import annotations

import re
import string
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

_FORMATTER = string.Formatter()
_FILTER = re.compile(r"^(?P<name>[a-z_]+)(?:\((?P<arg>.*)\))?$")
FILTERS = ("title", "proper", "lower", "upper", "join", "labels")
LABELS = "__labels__"  # in a values dict: tags field -> value -> label


def title_case(text: str) -> str:
    return " ".join(w.capitalize() for w in text.split())


class Piece(BaseModel):
    """One piece of a display line: a template, or `parts` joined by `sep`."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = None
    parts: list[str] | None = None
    sep: str = ", "
    default: str | None = None  # shown when every field it names is empty
    icon: str | None = None  # a hint surfaces may draw ("phone")
    _compiled: list["Template"] | None = PrivateAttr(None)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value):
        return {"text": value} if isinstance(value, str) else value

    @model_validator(mode="after")
    def _one_form(self) -> "Piece":
        if (self.text is None) == (self.parts is None):
            raise ValueError("a piece is a template string, or a mapping with exactly one of `text` and `parts`")
        for template in self.templates():
            check_template(template)
        return self

    def templates(self) -> list[str]:
        return [self.text] if self.text is not None else list(self.parts or [])

    def compiled(self) -> list["Template"]:
        if self._compiled is None:
            self._compiled = [Template(t) for t in self.templates()]
        return self._compiled


def _fields(template: str) -> list[tuple[str, list[tuple[str, str | None]], str]]:
    """(field name, filters, format spec) of every placeholder."""
    out = []
    for _literal, field, spec, conversion in _FORMATTER.parse(template):
        if field is None:
            continue
        if conversion:
            raise ValueError(f"{template!r}: '!{conversion}' is not supported; use a filter ('|title')")
        name, *filters = [p.strip() for p in field.split("|")]
        parsed = []
        for f in filters:
            m = _FILTER.match(f)
            if not m or m.group("name") not in FILTERS:
                raise ValueError(f"{template!r}: unknown filter {f!r} (known: {', '.join(FILTERS)})")
            parsed.append((m.group("name"), m.group("arg")))
        out.append((name, parsed, spec or ""))
    return out


def check_template(template: str) -> None:
    try:
        fields = _fields(template)
    except ValueError as exc:
        if "filter" in str(exc) or "supported" in str(exc):
            raise
        raise ValueError(f"{template!r}: {exc}") from None
    for name, _, _ in fields:
        if not name or not re.fullmatch(r"[a-z_][a-z0-9_]*", name):
            raise ValueError(f"{template!r}: {{{name}}} is not a field name")


def names_in(template: str) -> list[str]:
    return [name for name, _, _ in _fields(template)]


def empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _apply(value: Any, filters: list[tuple[str, str | None]], spec: str, labels: dict[str, str]) -> str:
    if not filters and not spec:
        return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)
    joined = False
    if isinstance(value, list) and any(name == "labels" for name, _ in filters):
        value = [labels.get(v, v) for v in value]
    for name, arg in filters:
        if name == "join" and isinstance(value, list):
            value, joined = (arg if arg is not None else ", ").join(str(v) for v in value), True
    if isinstance(value, list) and not joined:
        value = ", ".join(str(v) for v in value)
    text = format(value, spec) if spec else str(value)
    for name, _arg in filters:
        if name == "title":
            text = title_case(text)
        elif name == "proper":
            text = text.title() if text.isupper() else text
        elif name == "lower":
            text = text.lower()
        elif name == "upper":
            text = text.upper()
    return text


class Template:
    """One template, parsed once: (literal, field, filters, format spec) parts."""

    def __init__(self, template: str) -> None:
        self.text = template
        self.parts: list[tuple[str, str | None, list[tuple[str, str | None]], str]] = []
        for literal, field, spec, _conv in _FORMATTER.parse(template):
            if field is None:
                self.parts.append((literal, None, [], ""))
                continue
            name, filters, spec = _fields("{" + field + (":" + spec if spec else "") + "}")[0]
            self.parts.append((literal, name, filters, spec))
        self.names = [name for _, name, _, _ in self.parts if name is not None]

    def render(self, values: dict[str, Any]) -> str | None:
        """The template filled in, or None when every field it names is empty."""
        if self.names and all(empty(values.get(name)) for name in self.names):
            return None
        out = []
        for literal, name, filters, spec in self.parts:
            out.append(literal)
            if name is not None:
                value = values.get(name)
                labels = values.get(LABELS, {}).get(name, {}) if filters else {}
                out.append("" if empty(value) else _apply(value, filters, spec, labels))
        return "".join(out)


def render(template: str, values: dict[str, Any]) -> str | None:
    return Template(template).render(values)


class CompiledPiece:
    """A piece with its templates parsed, as the hot paths render it (a plain object: no
    pydantic attribute lookups per record)."""

    def __init__(self, piece: Piece) -> None:
        self.templates = list(piece.compiled())
        self.joined = piece.parts is not None
        self.sep, self.default, self.icon = piece.sep, piece.default, piece.icon

    def render(self, values: dict[str, Any]) -> str | None:
        if self.joined:
            parts = [p for p in (t.render(values) for t in self.templates) if p]
            text = self.sep.join(parts) if parts else None
        else:
            text = self.templates[0].render(values)
        return text if text is not None else self.default


def compile_pieces(pieces: list[Piece]) -> list[CompiledPiece]:
    return [CompiledPiece(p) for p in pieces]


def render_piece(piece: Piece, values: dict[str, Any]) -> str | None:
    return CompiledPiece(piece).render(values)
