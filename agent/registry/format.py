"""Registry results as text: one line per record for the model and the terminal, and one line
saying how a search was understood ("infant care · within 10 mi of 78702")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.registry.declaration import Declaration
from agent.registry.fields import label_of
from agent.registry.keys import Keys, title_case
from agent.registry.places import Place
from agent.registry.records import RecordSchema
from agent.registry.results import RegistryHit, RegistryResults
from agent.registry.template import Piece, compile_pieces
from agent.registry.values import days_label

if TYPE_CHECKING:
    from agent.prompts import PromptSet

TEXT_ROWS = 25  # rows listed in the compact text for the model


def capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


class Formatter:
    def __init__(self, schema: RecordSchema, prompts: "PromptSet") -> None:
        self.schema = schema
        self.prompts = prompts  # the words around the values, in the language being spoken
        self.decl: Declaration = schema.decl
        self.keys: Keys = schema.keys
        line = self.decl.display.line
        self.line_pieces = compile_pieces(line or [Piece(text="{" + self.decl.name_field + "}"), *self.decl.display.details])

    def describe(self, args: Any, near: Place | None = None, radius: float | None = None) -> str:
        """One line saying how a search was understood: 'infant care · within 10 mi of 78702'."""
        decl, say = self.decl, self.prompts.text
        parts: list[str] = []
        for name, tags in decl.tags.items():
            parts += [tags.values[v].label or v for v in getattr(args, name)]
        for name in args.flag_filters:
            value = getattr(args, name)
            label = label_of(name, decl.fields[name])
            if value is True:
                parts.append(label)
            elif value is False:
                parts.append(say("registry_without", label=label))
        for name, number in decl.numbers.items():
            label = label_of(name, number)
            if getattr(args, f"min_{name}", None) is not None:
                parts.append(say("registry_at_least", label=label, value=getattr(args, f"min_{name}")))
            if getattr(args, f"max_{name}", None) is not None:
                parts.append(say("registry_at_most", label=label, value=getattr(args, f"max_{name}")))
        if decl.hours:
            if args.open_at:
                parts.append(say("registry_open_by", time=args.open_at))
            if args.open_until:
                parts.append(say("registry_open_until", time=args.open_until))
        if decl.days and args.days:
            parts.append(say("registry_open_on", days=days_label(args.days)))
        places = sorted(decl.places.items(), key=lambda item: item[1].level == "zip")
        for name, place in places:
            value = getattr(args, name)
            if not value:
                continue
            if place.level == "zip":
                parts.append(f"{name.replace('_', ' ')} {value}")
            elif place.suffix:
                parts.append(say("registry_in", place=f"{title_case(self.keys.norm(value))} {place.suffix}"))
            else:
                parts.append(say("registry_in", place=title_case(value)))
        where_text = getattr(args, "near", None)
        if where_text or near:
            miles = radius or args.radius_miles
            where = near.name if near else where_text
            parts.append(say("registry_within", miles=f"{miles:g}", place=where) if miles
                         else say("registry_near", place=where))
        if args.query:
            parts.append(say("registry_matching", query=args.query))
        if args.limit == 0:
            parts.append(say("registry_all_results"))
        return " · ".join(parts) or say("registry_all_records", records=decl.record.plural)

    def values(self, hit: RegistryHit) -> dict[str, Any]:
        return self.schema.template_values(hit.values, hit.distance_miles)

    def line(self, hit: RegistryHit) -> str:
        values = self.values(hit)
        return " · ".join(t for t in (p.render(values) for p in self.line_pieces) if t is not None)

    def results_text(self, results: RegistryResults) -> str:
        """Compact text for the model (and a search-only answer): one line per record, capped at
        TEXT_ROWS lines, its sentences in the language being spoken."""
        lines: list[str] = []
        if results.args is not None:
            lines.append(self.prompts.text("registry_search_summary", record=self.decl.record.singular,
                                      summary=self.describe(results.args, results.near, results.radius_miles),
                                      total=results.total, shown=len(results.hits)))
        if results.message:
            lines.append(results.message)
        for i, hit in enumerate(results.hits[:TEXT_ROWS], 1):
            lines.append(f"{i}. {self.line(hit)}")
        if len(results.hits) > TEXT_ROWS:
            lines.append(self.prompts.text("registry_more_rows", count=len(results.hits) - TEXT_ROWS))
        return "\n".join(lines)
