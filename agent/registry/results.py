"""What a registry search returns: typed hits and results (a tool's `ToolResult.data`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from agent.registry.places import Place


class RegistryHit(BaseModel):
    """One record a search found: its stored values plus what the search computed."""

    id: str
    values: dict[str, Any] = Field(default_factory=dict)  # the fields the registry shows, as stored
    flags: list[str] = Field(default_factory=list)  # every flag field the record has
    matched: list[str] = Field(default_factory=list)  # requested tags/flags/days it matches
    distance_miles: float | None = None
    score: float | None = None
    lat: float | None = None
    lon: float | None = None
    source: str = ""

    def get(self, name: str, default: Any = None) -> Any:
        return self.values.get(name, default)


class RegistryResults(BaseModel):
    registry: str  # the registry's name
    hits: list[RegistryHit] = Field(default_factory=list)
    text: str = ""  # for the model (and search-only answers)
    message: str | None = None  # why nothing (or something unexpected) came back
    total: int = 0  # matches before `limit`
    near: Place | None = None
    radius_miles: float | None = None
    args: Any = None  # the registry's search arguments
