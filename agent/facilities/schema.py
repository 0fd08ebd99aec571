"""The facility search's LLM-facing schema: the arguments a model (or the /facility parser)
fills in, and the typed results it gets back.

Field descriptions are part of the schema the model sees, so they are written for the model.
The feature filters and the result's fields come from the one Facility model
(agent/facilities/facility.py).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, create_model, field_validator

from agent.facilities.facility import FLAG_FILTERS, Age, FacilityListing
from agent.facilities.geocode import Place
from agent.facilities.registry import parse_time

AgeGroup = Age
Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS: tuple[str, ...] = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

FEATURE_FLAGS: tuple[str, ...] = tuple(FLAG_FILTERS)  # the flags a search filters on
MAX_RESULTS = 1000  # "all" is capped here so one answer stays readable


class _Where(BaseModel):
    query: str | None = Field(
        None,
        description="Free text matched against facility names and descriptions, e.g. 'Ebenezer' or 'montessori'. "
        "Only for names or words that are not a place, age group or feature below.",
    )
    city: str | None = Field(None, description="City the facility is in, e.g. 'San Antonio'. Exact city, not nearby ones.")
    county: str | None = Field(None, description="County the facility is in, e.g. 'Travis' or 'Travis County'.")
    zip: str | None = Field(None, description="5-digit zip code the facility is in, e.g. '78702'.")
    near: str | None = Field(
        None,
        description="Find facilities around this place: a zip code, city, county or 'lat,lon'. "
        "Results are sorted by distance and show miles.",
    )
    radius_miles: float | None = Field(
        None, gt=0, le=500, description="Distance limit in miles for `near` (default 10 when `near` is given)."
    )
    ages: list[AgeGroup] = Field(
        default_factory=list,
        description="Age groups the facility must serve, all of them: infant (babies), toddler, pre-k "
        "(preschool), school (school-age).",
    )


# One optional filter per feature flag of the Facility model, described for the model.
_Features = create_model(
    "_Features", __base__=_Where,
    **{name: (bool | None, Field(None, description=ask)) for name, ask in FLAG_FILTERS.items()},  # type: ignore[call-overload]
)


class FacilitySearchArgs(_Features):  # type: ignore[misc, valid-type]
    """Search the licensed facility registry. Every filter given must hold; leave out what the user did not ask for."""

    min_capacity: int | None = Field(None, ge=0, description="Licensed capacity at least this many children.")
    open_at: str | None = Field(
        None,
        description="Opening time 'HH:MM' (24-hour): the facility must open at or before it, e.g. '06:30' "
        "for 'open by 6:30 am'.",
    )
    open_until: str | None = Field(
        None,
        description="Closing time 'HH:MM' (24-hour): the facility must stay open until at least then, e.g. '18:30' "
        "for 'open until 6:30 pm'.",
    )
    days: list[Weekday] | None = Field(
        None,
        description="Days of the week the facility must be open on, ALL of them, e.g. ['Sat', 'Sun'] for "
        "weekend care or ['Mon', 'Tue', 'Wed', 'Thu', 'Fri'] for weekdays. Leave out unless the user asks about days.",
    )
    limit: int = Field(
        10, ge=0, le=MAX_RESULTS, description="Most facilities to return; 0 = all matches (when the user asks for all)."
    )

    @field_validator("open_at", "open_until")
    @classmethod
    def _check_time(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        try:
            minutes = parse_time(value)  # also takes "6:30 am", "18:00", "6"
        except ValueError:
            raise ValueError("expected a time 'HH:MM', e.g. '06:30'") from None
        return f"{minutes // 60:02d}:{minutes % 60:02d}"

    @field_validator("days", mode="before")
    @classmethod
    def _day_names(cls, value):
        """'saturday', 'SAT' -> 'Sat' (models vary the spelling); week order, no repeats."""
        if not isinstance(value, list):
            return value
        named = [d[:3].title() if isinstance(d, str) and d.strip()[:3].title() in WEEKDAYS else d
                 for d in (v.strip() if isinstance(v, str) else v for v in value)]
        if any(d not in WEEKDAYS for d in named):
            return named  # the Literal check names the bad value
        return [d for d in WEEKDAYS if d in named] or None

    @field_validator("query", "city", "county", "zip", "near")
    @classmethod
    def _blank_is_none(cls, value: str | None) -> str | None:
        return value.strip() or None if isinstance(value, str) else value

    def requested_features(self) -> list[str]:
        return [f for f in FEATURE_FLAGS if getattr(self, f) is True]

    def has_criteria(self) -> bool:
        data = self.model_dump(exclude={"limit", "radius_miles"})
        return any(v not in (None, [], "") for v in data.values())


class FacilityHit(FacilityListing):
    """One facility a search found: its listing plus what the search computed."""

    features: list[str] = Field(default_factory=list, description="Every feature flag the facility has.")
    matched_features: list[str] = Field(default_factory=list, description="Requested ages/features it matches.")
    distance_miles: float | None = None
    score: float | None = None
    lat: float | None = None
    lon: float | None = None
    source: str = ""


class FacilityResults(BaseModel):
    facilities: list[FacilityHit] = Field(default_factory=list)
    text: str = ""
    message: str | None = None
    total: int = 0  # matches before `limit`
    near: Place | None = None
    radius_miles: float | None = None
    args: FacilitySearchArgs | None = None

