"""TEMPORARY: the old agent/facilities code behind the capability interface, until the generic
YAML-declared registry (agent/registry/) replaces it. Removed with agent/facilities/."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from agent.accents import fold
from agent.capabilities.base import Command, CommandResult, Detail, EvalSection, Found, RecordView, SearchOnly
from agent.tools.base import Tool

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.providers.base import Model
    from agent.runtime import Runtime

log = logging.getLogger(__name__)


class FacilityCapability:
    name = "facility"
    kind = "registry"
    description = ("looking for facilities or providers of the organisation's registry by place, zip code, distance, "
                   "age group, hours, capacity or features.")

    def __init__(self, runtime: "Runtime", domain: Any) -> None:
        from agent.facilities.words import shipped_words
        from agent.tools.search_facilities import make_tool

        self.runtime = runtime
        self.domain = domain
        self._tool = make_tool(runtime)
        words = shipped_words()
        self._place = re.compile(
            r"(\b\d{5}\b|\bwithin \d+(\.\d+)? ?(mi|miles?|km)\b|\bnear (me|\w+)|\b[A-Z][a-z]+ (county|co\.)\b|"
            r"\b\d+\+? (kids|children|slots|capacity)\b|\bopen (by|until|till|at) \d|" + words.place_marker_re() + ")")

    def tools(self) -> list[Tool]:
        return [self._tool]

    def claims(self, text: str) -> bool:
        from agent.facilities.query_parser import mentions_facility_criteria

        if not self._place.search(fold(text)):
            return False
        return self.domain.names_facility(text) or mentions_facility_criteria(text)

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found:
        from agent.facilities.extraction import fill_unplaced
        from agent.facilities.query_parser import parse_with_registry

        try:
            parsed = await parse_with_registry(self.runtime, query)
        except Exception as exc:  # e.g. the registry is not loaded: the tool says so itself
            log.warning("facility query parse failed: %s", type(exc).__name__)
            arguments: dict[str, Any] = {"query": query}
        else:
            parsed = await fill_unplaced(model, query, parsed)
            arguments = parsed.args.model_dump(exclude_none=True, exclude_defaults=True)
        return Found(self.name, self._tool.name, arguments, await self._tool(arguments), query)

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly:
        result = found.result if found is not None else None
        if result is None or not result.text.strip():
            return SearchOnly(text=prompts.render("search_only_empty"))
        return SearchOnly(text=result.text.strip(), references=list(result.references))

    def commands(self) -> list[Command]:
        from agent.facilities.command import USAGE

        return [Command(name="facility", capability=self.name, title="licensed facilities", usage=USAGE,
                        example="infant care near 78702")]

    async def run_command(self, name: str, text: str, *, model: "Model | None" = None) -> CommandResult:
        from agent.facilities.command import run_facility_command

        result = await run_facility_command(self.runtime, text, model=model)
        records = [_view(hit) for hit in (result.results.facilities if result.results else [])]
        notes = list(result.notes)
        if result.results and result.results.message:
            notes.append(result.results.message)
        return CommandResult(command=name, text=result.text, summary=result.summary, notes=notes,
                             is_help=result.is_help, reply=result.reply, records=records,
                             total=result.results.total if result.results else 0, json_data=result.to_json())

    def eval_sections(self) -> dict[str, EvalSection]:
        from agent.evaluation import facility

        return {"facility": facility.Section(self)}


def _view(hit: Any) -> RecordView:
    city = hit.city.title() if hit.city.isupper() else hit.city
    address = ", ".join(x for x in (hit.address, city, hit.zip) if x)
    details = [Detail(text=address)] if address else []
    if hit.phone:
        details.append(Detail(text=hit.phone, icon="phone"))
    if hit.ages:
        details.append(Detail(text="ages: " + ", ".join(hit.ages).lower()))
    if hit.distance_miles is not None:
        details.append(Detail(text=f"{hit.distance_miles:.1f} mi"))
    more = [Detail(text=f"Hours: {hit.hours}")] if hit.hours else []
    if hit.operation_number:
        more.append(Detail(text=f"Operation #{hit.operation_number}", icon="small"))
    return RecordView(id=hit.operation_number, title=hit.name or "Unnamed facility", details=details, more=more,
                      url=hit.website or None)
