"""`/facility TEXT` and `askdesk facility TEXT`: parse without a model, search, summarise.

One function serves Slack, Teams and the terminal, so every surface reads a query the
same way and shows the same interpretation line ("infant care · within 10 mi of 78702").
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agent.facilities.format import describe_args, format_hit
from agent.facilities.query_parser import parse_with_registry
from agent.facilities.schema import FacilityResults, FacilitySearchArgs
from agent.facilities.search import search_facilities
from agent.runtime import Runtime

MAX_COMMAND_CHARS = 500

USAGE = """\
Search the licensed facility registry. Write what you need in plain words, for example:
  /facility infant care near 78702
  /facility accredited centers in San Antonio with after-school care
  /facility within 10 miles of Richland Hills
  /facility toddlers w/ special needs in Dallas County, open by 6:30
  /facility drop-in care, 150+ kids
  /facility weekend care in Harris County
Understood: a zip code; a city or county; "near X" / "within N miles of X"; ages (infant/baby,
toddler, pre-k/preschool, school-age); features (after-school, special needs, accredited,
transportation, drop-in, part-time, get-well, pre-k program); "open by 6:30"; days open
("weekend care", "open saturdays", "sundays", "mon-fri"/"weekdays", "open on sat/sun"); "150+ kids";
"all" for every match. Anything else is matched against facility names; put a name in quotes."""


class FacilityCommandResult(BaseModel):
    text: str
    args: FacilitySearchArgs | None = None
    results: FacilityResults | None = None
    summary: str = ""  # how the text was understood
    notes: list[str] = Field(default_factory=list)  # fuzzy corrections and the like
    is_help: bool = False
    reply: str = ""  # the human-readable answer (plain text, one facility per line)

    def to_json(self) -> dict[str, Any]:
        """The `--json` shape: interpretation plus one small record per facility."""
        out: dict[str, Any] = {"query": self.text, "interpretation": self.summary, "notes": self.notes}
        if self.is_help:
            out["help"] = USAGE
            out["facilities"] = []
            return out
        res = self.results
        out["message"] = res.message if res else None
        out["total"] = res.total if res else 0
        near = bool(self.args and self.args.near and res and res.near)
        facilities = []
        for hit in res.facilities if res else []:
            record: dict[str, Any] = {
                "operation_number": hit.operation_number,
                "name": hit.name,
                "address": hit.address,
                "city": hit.city,
                "zip": hit.zip,
                "phone": hit.phone,
            }
            if near:
                record["distance_miles"] = hit.distance_miles
            record["matched_features"] = hit.matched_features
            facilities.append(record)
        out["facilities"] = facilities
        return out


def _help(text: str, note: str | None = None) -> FacilityCommandResult:
    reply = f"{note}\n\n{USAGE}" if note else USAGE
    return FacilityCommandResult(text=text, is_help=True, reply=reply, notes=[note] if note else [])


def render_reply(summary: str, notes: list[str], results: FacilityResults) -> str:
    lines = [f"Facilities: {summary}"]
    if notes:
        lines.append("(" + "; ".join(notes) + ")")
    if results.message:
        lines.append(results.message)
    if results.facilities:
        shown = len(results.facilities)
        more = f" (showing {shown}; add 'all' to see every match)" if results.total > shown else ""
        lines.append(f"{results.total} match(es){more}:")
        lines += [f"{i}. {format_hit(h)}" for i, h in enumerate(results.facilities, 1)]
    return "\n".join(lines)


async def run_facility_command(runtime: Runtime, text: str, *, collection: str | None = None,
                               model: Any | None = None, prompts: Any | None = None) -> FacilityCommandResult:
    """Parse `text` deterministically and search; empty or 'help' text gives the usage. With a
    router `model`, words the parse could not place get one extraction call (extraction.py)."""
    raw = (text or "").strip()
    if not raw or raw.lower() in {"help", "-h", "--help", "?"}:
        return _help(raw)
    if len(raw) > MAX_COMMAND_CHARS:
        return _help(raw[:80] + "…", f"That is {len(raw)} characters; a facility search takes at most "
                                      f"{MAX_COMMAND_CHARS}. Keep to the place, ages and features you need.")
    try:
        parsed = await parse_with_registry(runtime, raw, collection=collection)
        if model is not None:
            from agent.facilities.extraction import fill_unplaced

            parsed = await fill_unplaced(model, raw, parsed, prompts)
        args = parsed.args
        if not args.has_criteria() and args.limit != 0:  # "list all facilities" is a request
            return _help(raw, f"I couldn't find a place, age group, feature or name in '{raw}'.")
        results = await search_facilities(runtime, args, collection=collection)
    except Exception as exc:  # the vector store is down or misconfigured: say so, don't crash the surface
        reply = f"The facility registry is unavailable right now ({type(exc).__name__}: {exc}). Please try again later."
        return FacilityCommandResult(text=raw, reply=reply, notes=[reply])
    summary = describe_args(args, results.near, results.radius_miles)
    return FacilityCommandResult(
        text=raw,
        args=args,
        results=results,
        summary=summary,
        notes=parsed.notes,
        reply=render_reply(summary, parsed.notes, results),
    )
