"""`search_facilities`: the agent's tool over the licensed facility registry."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.facilities.schema import FacilitySearchArgs
from agent.facilities.search import search_facilities
from agent.references import Reference
from agent.tools.base import Tool, ToolResult

if TYPE_CHECKING:
    from agent.runtime import Runtime


def make_tool(runtime: "Runtime", *, facilities_collection: str | None = None) -> Tool:
    async def search_facilities_tool(args: FacilitySearchArgs) -> ToolResult:
        """Find licensed child-care facilities in the registry by place (city, county, zip, or near a
        place within a radius in miles), age groups served, features (after-school care, special needs,
        accredited, transportation, drop-in, part-time, pre-k program, get-well care), capacity,
        opening time, days open (e.g. weekends), or by name. Returns each facility's operation
        number, address, phone, hours, days, ages, features and distance. Use for questions about
        specific facilities or providers, not for program rules."""
        results = await search_facilities(runtime, args, collection=facilities_collection)  # type: ignore[arg-type]
        references = [
            Reference(
                source=hit.source or "facility registry",
                title=hit.name,
                section=f"operation #{hit.operation_number}",
                url=hit.website or None,
            )
            for hit in results.facilities
        ]
        return ToolResult(text=results.text, references=references, data=results.facilities)

    return Tool(
        name="search_facilities",
        args_model=FacilitySearchArgs,
        fn=search_facilities_tool,  # type: ignore[arg-type]
        progress="Looking up facilities…",
    )
