"""A hit as surfaces show it (`RecordView`), cite it (`Reference`) and print it (`--json`)."""

from __future__ import annotations

from typing import Any

from agent.capabilities.base import Detail, RecordView
from agent.references import Reference
from agent.registry.format import Formatter
from agent.registry.results import RegistryHit
from agent.registry.template import Template, compile_pieces


class Views:
    def __init__(self, formatter: Formatter) -> None:
        self.formatter = formatter
        self.decl = formatter.decl
        self._reference = Template(self.decl.reference) if self.decl.reference else None
        self._details = compile_pieces(self.decl.display.details)
        self._more = compile_pieces(self.decl.display.more)

    def title(self, hit: RegistryHit) -> str:
        field = self.decl.display.title or self.decl.name_field
        unnamed = self.formatter.prompts.text("registry_unnamed", record=self.decl.record.singular)
        return str(hit.get(field) or "") or unnamed

    def url(self, hit: RegistryHit) -> str | None:
        field = self.decl.display.url
        return (str(hit.get(field) or "") or None) if field else None

    def record_view(self, hit: RegistryHit) -> RecordView:
        values = self.formatter.values(hit)

        def pieces(compiled) -> list[Detail]:
            return [Detail(text=text, icon=piece.icon) for piece in compiled if (text := piece.render(values))]

        return RecordView(id=hit.id, title=self.title(hit), details=pieces(self._details), more=pieces(self._more),
                          url=self.url(hit))

    def reference(self, hit: RegistryHit) -> Reference:
        section = self._reference.render(self.formatter.values(hit)) if self._reference else hit.id
        return Reference(source=hit.source or f"{self.decl.record.singular} registry", title=self.title(hit),
                         section=section or "", url=self.url(hit))

    def json_record(self, hit: RegistryHit, *, near: bool) -> dict[str, Any]:
        """The declared `json` fields, the distance (searches near a place) and what matched."""
        fields = self.decl.json_fields or [self.decl.id_field, self.decl.name_field]
        record: dict[str, Any] = {name: hit.get(name, "") for name in fields}
        if near:
            record["distance_miles"] = hit.distance_miles
        record["matched_features"] = hit.matched
        return record
