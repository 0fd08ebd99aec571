"""Registry results as text: one line per record for the model and the terminal, and one line
saying how a search was understood ("infant care · within 10 mi of 78702")."""

from __future__ import annotations

from typing import Any

from agent.registry.declaration import Declaration
from agent.registry.fields import label_of
from agent.registry.keys import Keys, title_case
from agent.registry.places import Place
from agent.registry.records import RecordSchema
from agent.registry.results import RegistryHit, RegistryResults
from agent.registry.template import Piece, compile_pieces
from agent.registry.values import days_label

TEXT_ROWS = 25  # rows listed in the compact text for the model


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


class Formatter:
    def __init__(self, schema: RecordSchema) -> None:
        self.schema = schema
        self.decl: Declaration = schema.decl
        self.keys: Keys = schema.keys
        line = self.decl.display.line
        self.line_pieces = compile_pieces(line or [Piece(text="{" + self.decl.name_field + "}"), *self.decl.display.details])

    def describe(self, args: Any, near: Place | None = None, radius: float | None = None) -> str:
        """One line saying how a search was understood: 'infant care · within 10 mi of 78702'."""
        decl = self.decl
        parts: list[str] = []
        for name, tags in decl.tags.items():
            parts += [tags.values[v].label or v for v in getattr(args, name)]
        for name in args.flag_filters:
            value = getattr(args, name)
            label = label_of(name, decl.fields[name])
            if value is True:
                parts.append(label)
            elif value is False:
                parts.append(f"no {label}")
        for name, number in decl.numbers.items():
            label = label_of(name, number)
            if getattr(args, f"min_{name}", None) is not None:
                parts.append(f"{label} {getattr(args, f'min_{name}')}+")
            if getattr(args, f"max_{name}", None) is not None:
                parts.append(f"{label} up to {getattr(args, f'max_{name}')}")
        if decl.hours:
            if args.open_at:
                parts.append(f"open by {args.open_at}")
            if args.open_until:
                parts.append(f"open until {args.open_until}")
        if decl.days and args.days:
            parts.append(f"open {days_label(args.days)}")
        places = sorted(decl.places.items(), key=lambda item: item[1].level == "zip")
        for name, place in places:
            value = getattr(args, name)
            if not value:
                continue
            if place.level == "zip":
                parts.append(f"{name.replace('_', ' ')} {value}")
            elif place.suffix:
                parts.append(f"in {title_case(self.keys.norm(value))} {place.suffix}")
            else:
                parts.append(f"in {title_case(value)}")
        where_text = getattr(args, "near", None)
        if where_text or near:
            miles = radius or args.radius_miles
            where = near.name if near else where_text
            parts.append(f"within {miles:g} mi of {where}" if miles else f"near {where}")
        if args.query:
            parts.append(f'matching "{args.query}"')
        if args.limit == 0:
            parts.append("all results")
        return " · ".join(parts) or f"all {decl.record.plural}"

    def values(self, hit: RegistryHit) -> dict[str, Any]:
        return self.schema.template_values(hit.values, hit.distance_miles)

    def line(self, hit: RegistryHit) -> str:
        values = self.values(hit)
        return " · ".join(t for t in (p.render(values) for p in self.line_pieces) if t is not None)

    def results_text(self, results: RegistryResults) -> str:
        """Compact text for the model: one line per record, capped at TEXT_ROWS lines."""
        lines: list[str] = []
        if results.args is not None:
            lines.append(
                f"{capitalised(self.decl.record.singular)} search "
                f"({self.describe(results.args, results.near, results.radius_miles)}): "
                f"{results.total} match(es), showing {len(results.hits)}."
            )
        if results.message:
            lines.append(results.message)
        for i, hit in enumerate(results.hits[:TEXT_ROWS], 1):
            lines.append(f"{i}. {self.line(hit)}")
        if len(results.hits) > TEXT_ROWS:
            lines.append(f"… and {len(results.hits) - TEXT_ROWS} more (see the structured results).")
        return "\n".join(lines)
