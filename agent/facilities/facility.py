"""The facility record, declared once.

Every other shape derives from these models: the CSV column mapping (`csv_columns`, from
each field's `csv` header), the stored payload (`Facility.model_dump`), the search result
(`FacilityHit` extends `FacilityListing`, the fields a search shows) and the LLM-facing
feature filters (`FacilitySearchArgs` builds one `<flag>: bool | None` filter per
feature flag, with the flag's `ask` text as the description the model reads).
"""

from __future__ import annotations

import hashlib
import json
import re
import uuid
from typing import Any, Literal

from pydantic import BaseModel, Field

Age = Literal["infant", "toddler", "pre-k", "school"]
AGES: tuple[str, ...] = ("infant", "toddler", "pre-k", "school")


def csv(header: str, default: Any = "") -> Any:
    """A field read from the CSV column `header` (Texas DFPS layout; `facilities_columns` remaps it)."""
    if isinstance(default, list):
        return Field(default_factory=list, json_schema_extra={"csv": header})
    return Field(default, json_schema_extra={"csv": header})


def flag(header: str, *, label: str, ask: str | None = None) -> Any:
    """A Y/N feature column. `label` is how answers name it; `ask`, when given, makes it a
    search filter with that description for the model."""
    extra: dict[str, Any] = {"csv": header, "flag": label}
    if ask:
        extra["ask"] = ask
    return Field(False, json_schema_extra=extra)


class GeoPoint(BaseModel):
    lat: float
    lon: float


class FacilityListing(BaseModel):
    """What a search shows of a facility (the result's fields, in display order)."""

    operation_number: str = csv("operation_number", ...)
    name: str = csv("name", ...)
    address: str = csv("address")
    city: str = csv("city")
    zip: str = csv("zip")
    county: str = csv("county")
    phone: str = csv("phone")
    email: str = csv("email")
    website: str = csv("website")
    ages: list[Age] = csv("ages_served", [])
    hours: str = csv("hours")
    days: list[str] = csv("days", [])
    capacity: int | None = csv("capacity", None)


class Facility(FacilityListing):
    """One registry row, typed, as stored. `city_key`/`county_key`/`zip5` are the normalised filter keys."""

    operation_id: str = csv("operation_id")
    operation_type: str = csv("operation_type")
    issuance_type: str = csv("issuance_type")
    open_minutes: int | None = None  # from `hours`
    close_minutes: int | None = None
    after_school_care: bool = flag("after_school_care", label="after-school care",
                                   ask="True: must offer after-school care.")
    special_needs: bool = flag("special_needs", label="special needs",
                               ask="True: must serve children with special needs.")
    accredited: bool = flag("accredited", label="accredited", ask="True: must be accredited.")
    transportation: bool = flag("transportation", label="transportation", ask="True: must provide transportation.")
    drop_in_care: bool = flag("drop_in_care", label="drop-in care", ask="True: must offer drop-in care.")
    part_time_care: bool = flag("part_time_care", label="part-time care", ask="True: must offer part-time care.")
    pre_k: bool = flag("pre_k", label="pre-k program", ask="True: must run a pre-kindergarten program.")
    get_well_care: bool = flag("get_well_care", label="get-well care",
                               ask="True: must offer get-well (mildly ill child) care.")
    special_skills: bool = flag("special_skills", label="special skills")
    last_modified: str = csv("last_modified")
    location: GeoPoint | None = None  # from the latitude and longitude columns
    extra: dict[str, str] = Field(default_factory=dict)  # unmapped columns, as text

    # filter keys, derived
    city_key: str = ""
    county_key: str = ""
    zip5: str = ""

    def features(self) -> list[str]:
        return [name for name in FLAGS if getattr(self, name)]

    def description(self) -> str:
        """Short text embedded for fuzzy name/description matches (name, place, services)."""
        ages = ", ".join(self.ages)
        services = ", ".join(f.replace("_", " ") for f in self.features())
        parts = [self.name, f"{title_case(self.city)}, {title_case(self.county)} County"]
        if ages:
            parts.append(f"ages: {ages}")
        if services:
            parts.append(f"services: {services}")
        return ". ".join(parts)

    def point_id(self) -> str:
        return facility_point_id(self.operation_number)

    def content_hash(self) -> str:
        """Changes when any stored value changes (keys sorted: independent of field order)."""
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


def _extra(name: str) -> dict[str, Any]:
    extra = Facility.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


# Feature flags (Y/N columns), in display order, and how answers name them.
FLAGS: tuple[str, ...] = tuple(name for name in Facility.model_fields if "flag" in _extra(name))
FEATURE_LABELS: dict[str, str] = {name: str(_extra(name)["flag"]) for name in FLAGS}
# The flags a search can filter on -> the description the model reads.
FLAG_FILTERS: dict[str, str] = {name: str(_extra(name)["ask"]) for name in FLAGS if "ask" in _extra(name)}


def csv_columns() -> dict[str, str]:
    """Facility field -> CSV header; the defaults match the demo registry (examples/texas-childcare/facilities.csv)."""
    columns = {name: str(_extra(name)["csv"]) for name in Facility.model_fields if "csv" in _extra(name)}
    return {**columns, "latitude": "latitude", "longitude": "longitude"}  # together: `location`


def facility_point_id(operation_number: str) -> str:
    """Deterministic point id: re-ingesting the same registry overwrites, never duplicates."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"askdesk-facility:{operation_number}"))


def norm_key(text: str) -> str:
    """Filter key for a city/county name: lower case, single spaces, no trailing 'county'."""
    text = re.sub(r"[^\w\s'-]", " ", text.lower())
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+county$", "", text)


def title_case(text: str) -> str:
    return " ".join(w.capitalize() for w in text.split())
