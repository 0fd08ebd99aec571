"""A capability: one tool over the organisation's office hours, from a small table.

Only `name`, `description` and `tools()` are required; `build` (join the deployment only when
ASKDESK_HELLO_OFFICES is set), `claims` and `prefetch` are optional hooks it uses so a plain
question is answered with one model call, or with none when no model is configured.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from agent.capabilities.base import Capability, Found
from agent.tools.base import Tool, ToolResult
from askdesk_hello.settings import HelloSettings

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.providers.base import Model
    from agent.runtime import Runtime

HOURS = {
    "austin": "Monday to Friday, 8:00 to 17:00",
    "houston": "Monday to Thursday, 7:30 to 16:30; Friday 7:30 to 12:00",
    "el paso": "Monday to Friday, 9:00 to 18:00 (Mountain Time)",
}
ASKS_HOURS = re.compile(r"\b(office hours|opening hours|open|hours)\b", re.IGNORECASE)


class OfficeHoursArgs(BaseModel):
    city: str = Field(..., min_length=1, description="The office's city, e.g. Austin.")


class OfficeHours(Capability):
    name = "office_hours"
    description = "asking when one of the organisation's offices is open, by city"

    @classmethod
    def build(cls, runtime: "Runtime | None", settings: "Settings") -> list[Capability]:
        return [cls(runtime)] if HelloSettings.of(settings).offices else []

    @classmethod
    def env_variables(cls) -> list[str]:
        return ["ASKDESK_HELLO_OFFICES"]

    def tools(self) -> list[Tool]:
        return [Tool(name="office_hours", args_model=OfficeHoursArgs, fn=self.office_hours,
                     progress="Looking up office hours…")]

    async def office_hours(self, args: OfficeHoursArgs) -> ToolResult:
        """When the office in a city is open."""
        hours = HOURS.get(args.city.strip().lower())
        if hours is None:
            return ToolResult(text=f"No office in {args.city}. Offices: {', '.join(c.title() for c in HOURS)}.")
        return ToolResult(text=f"The {args.city.strip().title()} office is open {hours}.")

    def city(self, text: str) -> str | None:
        return next((c for c in HOURS if re.search(rf"\b{c}\b", text, re.IGNORECASE)), None)

    def claims(self, text: str) -> bool:
        """"when is the Austin office open?": an office's city and a word about hours."""
        return self.city(text) is not None and bool(ASKS_HOURS.search(text))

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found | None:
        city = self.city(query)
        if city is None:
            return None
        arguments = {"city": city}
        return Found(self.name, "office_hours", arguments, await self.tools()[0](arguments), query)
