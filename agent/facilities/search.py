"""`search_facilities`: exact filters, geo radius and free-text ranking over the registry.

Filters (city, county, zip, ages, feature flags, capacity, opening time, days open, radius) are Qdrant
payload filters, so they are exact; `near` adds a `geo_radius` filter and sorts by distance.
A free-text `query` ranks the filtered set by hybrid dense + BM25 match of the facility
description (name, place, services). Places the registry or the offline gazetteer does not
know produce a message with suggestions instead of an empty list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, field_validator
from qdrant_client import models

from agent.facilities.geocode import (
    METERS_PER_MILE,
    Geocoder,
    Place,
    UnknownPlace,
    haversine_miles,
)
from agent.facilities.places import known_places
from agent.facilities.registry import FLAGS, norm_key, parse_time, title_case
from agent.knowledge.sparse import bm25_query
from agent.knowledge.store import DENSE, SPARSE
from agent.runtime import Runtime

AgeGroup = Literal["infant", "toddler", "pre-k", "school"]
Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
WEEKDAYS: tuple[str, ...] = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

FEATURE_FLAGS: tuple[str, ...] = tuple(f for f in FLAGS if f != "special_skills")
MAX_RESULTS = 1000  # "all" is capped here so one answer stays readable
TEXT_ROWS = 25  # rows listed in the compact text for the model
RRF_K = 60  # reciprocal rank fusion constant (the usual 60)


class FacilitySearchArgs(BaseModel):
    """Search the licensed facility registry. Every filter given must hold; leave out what the user did not ask for."""

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
    after_school_care: bool | None = Field(None, description="True: must offer after-school care.")
    special_needs: bool | None = Field(None, description="True: must serve children with special needs.")
    accredited: bool | None = Field(None, description="True: must be accredited.")
    transportation: bool | None = Field(None, description="True: must provide transportation.")
    drop_in_care: bool | None = Field(None, description="True: must offer drop-in care.")
    part_time_care: bool | None = Field(None, description="True: must offer part-time care.")
    pre_k: bool | None = Field(None, description="True: must run a pre-kindergarten program.")
    get_well_care: bool | None = Field(None, description="True: must offer get-well (mildly ill child) care.")
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


class FacilityHit(BaseModel):
    operation_number: str
    name: str
    address: str = ""
    city: str = ""
    zip: str = ""
    county: str = ""
    phone: str = ""
    email: str = ""
    website: str = ""
    ages: list[str] = Field(default_factory=list)
    hours: str = ""
    days: list[str] = Field(default_factory=list)
    capacity: int | None = None
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


# --- implementation ---------------------------------------------------------------


def _minutes(hhmm: str) -> int:
    hour, minute = hhmm.split(":")
    return int(hour) * 60 + int(minute)


def _match(key: str, value) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


@dataclass
class _Resolved:
    conditions: list[models.Condition] = field(default_factory=list)
    near: Place | None = None
    radius_miles: float | None = None
    notes: list[str] = field(default_factory=list)
    message: str | None = None  # set when the search cannot run (unknown place)


async def _resolve(runtime: Runtime, args: FacilitySearchArgs, collection: str) -> _Resolved:
    """Turn args into Qdrant conditions, resolving places against the registry."""
    places = await known_places(runtime, collection)
    geocoder = Geocoder(places, runtime.settings.facilities_state)
    out = _Resolved()
    cond = out.conditions
    near_text, radius = args.near, args.radius_miles

    city, county = args.city, args.county
    if city and not county and norm_key(city) in places.counties and norm_key(city) not in places.cities:
        city, county = None, city  # "Travis County" given as a city
    if city:
        key = norm_key(city.split(",")[0])
        if key in places.cities:
            cond.append(_match("city_key", key))
        else:
            try:
                place = geocoder.resolve(city)
            except UnknownPlace as exc:
                out.message = str(exc)
                return out
            if near_text is None:  # a real place without listed facilities: search around it
                near_text = city
                out.notes.append(
                    f"No facility in the registry lists {place.name} as its city; showing those within "
                    f"{radius or runtime.settings.facilities_radius_miles:g} miles of it."
                )
            else:
                out.message = f"No facility in the registry lists {place.name} as its city."
                return out
    if county:
        key = norm_key(county)
        if key in places.counties:
            cond.append(_match("county_key", key))
        else:
            suggestions = geocoder.suggest(key, county=True)
            place = geocoder.county_place(key)
            if place:
                out.message = (
                    f"No facility in the registry is in {place.name}. Try near='{place.name}' with a radius."
                )
            else:
                out.message = str(UnknownPlace(county, [s for s in suggestions if s.endswith("County")]))
            return out
    if args.zip:
        m = re.match(r"\s*(\d{5})", args.zip)
        if not m:
            out.message = f"'{args.zip}' is not a zip code (expected 5 digits, e.g. 78702)."
            return out
        zip5 = m.group(1)
        if zip5 in places.zips or near_text is not None:
            cond.append(_match("zip5", zip5))
        elif geocoder.zip_place(zip5):  # a real zip without listed facilities: search around it
            near_text = zip5
            out.notes.append(
                f"No facility in the registry has zip code {zip5}; showing those within "
                f"{radius or runtime.settings.facilities_radius_miles:g} miles of it."
            )
        else:
            out.message = f"I don't know zip code {zip5}."
            return out
    for age in args.ages:
        cond.append(_match("ages", age))
    for flag in FEATURE_FLAGS:
        value = getattr(args, flag)
        if value is not None:
            cond.append(_match(flag, bool(value)))
    for day in args.days or []:
        cond.append(_match("days", day.lower()))  # the payload stores ["mon", "tue", ...]
    if args.min_capacity is not None:
        cond.append(models.FieldCondition(key="capacity", range=models.Range(gte=args.min_capacity)))
    if args.open_at:
        cond.append(models.FieldCondition(key="open_minutes", range=models.Range(lte=_minutes(args.open_at))))
    if args.open_until:
        cond.append(models.FieldCondition(key="close_minutes", range=models.Range(gte=_minutes(args.open_until))))
    if near_text:
        try:
            out.near = geocoder.resolve(near_text)
        except UnknownPlace as exc:
            out.message = str(exc)
            return out
        out.radius_miles = radius or runtime.settings.facilities_radius_miles
        cond.append(
            models.FieldCondition(
                key="location",
                geo_radius=models.GeoRadius(
                    center=models.GeoPoint(lat=out.near.lat, lon=out.near.lon),
                    radius=out.radius_miles * METERS_PER_MILE,
                ),
            )
        )
    return out


def _hit(point, args: FacilitySearchArgs, near: Place | None, score: float | None) -> FacilityHit:
    p = point.payload or {}
    loc = p.get("location") or {}
    distance = None
    if near and loc:
        distance = round(haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), 2)
    features = [f for f in FLAGS if p.get(f)]
    matched = list(args.ages) + args.requested_features() + ([f"open {_days_label(args.days)}"] if args.days else [])
    return FacilityHit(
        operation_number=str(p.get("operation_number", "")),
        name=p.get("name", ""),
        address=p.get("address", ""),
        city=p.get("city", ""),
        zip=p.get("zip", ""),
        county=p.get("county", ""),
        phone=p.get("phone", ""),
        email=p.get("email", ""),
        website=p.get("website", ""),
        ages=list(p.get("ages") or []),
        hours=p.get("hours", ""),
        days=list(p.get("days") or []),
        capacity=p.get("capacity"),
        features=features,
        matched_features=matched,
        distance_miles=distance,
        score=score,
        lat=loc.get("lat"),
        lon=loc.get("lon"),
        source=p.get("source", ""),
    )


_PAYLOAD = [
    "operation_number", "name", "address", "city", "zip", "county", "phone", "email", "website", "ages",
    "hours", "days", "capacity", "location", "source", *FLAGS,
]


_SORT_PAYLOAD = ["name", "operation_number", "location"]


def _sort_key(payload: dict, near: Place | None) -> tuple:
    """By distance (nearest first) when searching near a place, otherwise by name."""
    name = str(payload.get("name", "")).lower(), str(payload.get("operation_number", ""))
    if near is None:
        return (0, 0.0, *name)
    loc = payload.get("location")
    if not loc:
        return (1, 0.0, *name)
    return (0, haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), *name)


async def _scroll_all(runtime: Runtime, collection: str, flt: models.Filter | None, payload) -> list:
    points: list = []
    offset = None
    while True:
        batch, offset = await runtime.qdrant.scroll(
            collection, scroll_filter=flt, limit=2048, offset=offset, with_payload=payload, with_vectors=False
        )
        points.extend(batch)
        if offset is None or len(points) >= 200_000:
            return points


async def _ranked(
    runtime: Runtime, collection: str, flt: models.Filter | None, query: str, limit: int
) -> tuple[list, int, str | None]:
    """Facilities ranked by the words of `query`: hybrid dense + BM25 (RRF).

    With other criteria (`flt`), the words rank the matches and never exclude one: leftover
    words of a colloquial request ("any decent daycares…") must not empty the result. Alone,
    they are a name search: only facilities sharing a word with the query are returned, and
    when none does (a typo), the closest by meaning with a note. Returns (points, total, note).
    """
    sparse = bm25_query(query)
    word_hits = []
    if sparse.indices:
        resp = await runtime.qdrant.query_points(
            collection, query=sparse, using=SPARSE, query_filter=flt, limit=MAX_RESULTS, with_payload=_PAYLOAD,
            with_vectors=[DENSE],
        )
        word_hits = resp.points
    dense = await runtime.embedder().embed_query(query)
    if flt is not None:
        by_meaning = (await runtime.qdrant.query_points(
            collection, query=dense, using=DENSE, query_filter=flt, limit=MAX_RESULTS, with_payload=_PAYLOAD,
        )).points
        fused, _, _ = _fuse(word_hits, dense, limit) if word_hits else ([], 0, None)
        seen = {p.id for p in fused}
        points = (fused + [p for p in by_meaning if p.id not in seen])[:limit]
        return points, len(by_meaning), None
    if not word_hits:
        resp = await runtime.qdrant.query_points(
            collection, query=dense, using=DENSE, query_filter=flt, limit=min(limit, 5), with_payload=_PAYLOAD
        )
        note = f"No facility name or description contains '{query}'; these are the closest by meaning." if resp.points else None
        return resp.points, len(resp.points), note
    return _fuse(word_hits, dense, limit)


def _fuse(word_hits: list, dense: list[float], limit: int) -> tuple[list, int, None]:
    """RRF of the word hits' BM25 order and their dense similarity to the query."""
    # Fuse here rather than in a second Qdrant query: the word hits carry their dense vectors,
    # so one filtered scan serves both rankings (an id filter is slow in embedded mode).
    matrix = np.asarray([p.vector[DENSE] for p in word_hits], dtype=np.float32)
    q = np.asarray(dense, dtype=np.float32)
    cosine = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q) + 1e-9)
    dense_rank = {int(i): r for r, i in enumerate(np.argsort(-cosine))}
    # word_hits come in BM25 order, so index i is the sparse rank
    fused = [(1 / (RRF_K + i + 1) + 1 / (RRF_K + dense_rank[i] + 1), i) for i in range(len(word_hits))]
    fused.sort(key=lambda t: -t[0])
    points = []
    for score, i in fused[:limit]:
        point = word_hits[i]
        point.score = score
        points.append(point)
    return points, len(word_hits), None


async def search_facilities(runtime: Runtime, args: FacilitySearchArgs, *, collection: str | None = None) -> FacilityResults:
    """Run a facility search; never raises for bad places (they come back as `message`)."""
    collection = collection or runtime.settings.facilities_collection
    if not await runtime.qdrant.collection_exists(collection):
        msg = (
            f"The facility registry is not loaded (no collection '{collection}'). "
            "Load it with: askdesk ingest-facilities FILE.csv"
        )
        return FacilityResults(text=msg, message=msg, args=args)
    resolved = await _resolve(runtime, args, collection)
    if resolved.message:
        return FacilityResults(text=resolved.message, message=resolved.message, args=args)
    flt = models.Filter(must=resolved.conditions) if resolved.conditions else None
    limit = args.limit or MAX_RESULTS
    near = resolved.near

    notes = list(resolved.notes)
    ranked = None
    if args.query:
        try:
            ranked = await _ranked(runtime, collection, flt, args.query, limit)
        except Exception as exc:  # embedder missing or mismatched: the filters still answer
            notes.append(f"Name matching is unavailable ({type(exc).__name__}: {exc}); showing all filter matches.")
    if ranked is not None:
        points, total, note = ranked
        if note:
            notes.append(note)
        hits = [_hit(p, args, near, round(p.score, 4) if p.score is not None else None) for p in points]
        if near:  # relevance picks, distance orders
            hits.sort(key=lambda h: (h.distance_miles is None, h.distance_miles or 0.0))
    else:
        # every match's sort keys, then full records for the page only
        keys = await _scroll_all(runtime, collection, flt, _SORT_PAYLOAD)
        total = len(keys)
        keys.sort(key=lambda p: _sort_key(p.payload or {}, near))
        page = [p.id for p in keys[:limit]]
        records = {p.id: p for p in await runtime.qdrant.retrieve(collection, ids=page, with_payload=_PAYLOAD)} if page else {}
        hits = [_hit(records[pid], args, near, None) for pid in page if pid in records]

    if total == 0:
        notes.append("No facility matches all of: " + describe_args(args, resolved.near, resolved.radius_miles) + ".")
    message = " ".join(notes) or None
    results = FacilityResults(
        facilities=hits, total=total, message=message, near=near, radius_miles=resolved.radius_miles, args=args
    )
    results.text = format_results(results)
    return results


# --- text forms ----------------------------------------------------------------------

_FEATURE_LABELS = {
    "after_school_care": "after-school care",
    "special_needs": "special needs",
    "accredited": "accredited",
    "transportation": "transportation",
    "drop_in_care": "drop-in care",
    "part_time_care": "part-time care",
    "pre_k": "pre-k program",
    "get_well_care": "get-well care",
    "special_skills": "special skills",
}
_AGE_LABELS = {"infant": "infant care", "toddler": "toddlers", "pre-k": "pre-k ages", "school": "school-age"}


def feature_label(flag: str) -> str:
    return _FEATURE_LABELS.get(flag, flag.replace("_", " "))


def describe_args(args: FacilitySearchArgs, near: Place | None = None, radius: float | None = None) -> str:
    """One line saying how a search was understood: 'infant care · within 10 mi of 78702'."""
    parts: list[str] = [_AGE_LABELS[a] for a in args.ages]
    for flag in FEATURE_FLAGS:
        value = getattr(args, flag)
        if value is True:
            parts.append(feature_label(flag))
        elif value is False:
            parts.append(f"no {feature_label(flag)}")
    if args.min_capacity is not None:
        parts.append(f"capacity {args.min_capacity}+")
    if args.open_at:
        parts.append(f"open by {args.open_at}")
    if args.open_until:
        parts.append(f"open until {args.open_until}")
    if args.days:
        parts.append(f"open {_days_label(args.days)}")
    if args.city:
        parts.append(f"in {title_case(args.city)}")
    if args.county:
        county = title_case(norm_key(args.county))
        parts.append(f"in {county} County")
    if args.zip:
        parts.append(f"zip {args.zip}")
    if args.near or near:
        miles = radius or args.radius_miles
        where = near.name if near else args.near
        parts.append(f"within {miles:g} mi of {where}" if miles else f"near {where}")
    if args.query:
        parts.append(f'matching "{args.query}"')
    if args.limit == 0:
        parts.append("all results")
    return " · ".join(parts) or "all facilities"


def _days_label(days: list[str]) -> str:
    """['mon', ..., 'fri'] -> 'Mon-Fri'; other sets are listed ('Mon, Wed, Sat')."""
    names = [d.title() for d in days]
    idx = [WEEKDAYS.index(d) for d in names if d in WEEKDAYS]
    if len(idx) >= 3 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{WEEKDAYS[idx[0]]}-{WEEKDAYS[idx[-1]]}"
    return ", ".join(names)


def format_hit(hit: FacilityHit) -> str:
    where = ", ".join(x for x in (hit.address, title_case(hit.city), hit.zip) if x)
    bits = [f"{hit.name} (#{hit.operation_number})", where]
    if hit.distance_miles is not None:
        bits.append(f"{hit.distance_miles:.1f} mi")
    if hit.phone:
        bits.append(hit.phone)
    bits.append(hit.hours or "hours not listed")
    if hit.days:
        bits.append(_days_label(hit.days))
    if hit.ages:
        bits.append("ages " + "/".join(hit.ages))
    if hit.capacity is not None:
        bits.append(f"capacity {hit.capacity}")
    if hit.features:
        bits.append(", ".join(feature_label(f) for f in hit.features))
    return " · ".join(bits)


def format_results(results: FacilityResults) -> str:
    """Compact text for the model: one line per facility, capped at TEXT_ROWS lines."""
    lines: list[str] = []
    if results.args is not None:
        lines.append(
            f"Facility search ({describe_args(results.args, results.near, results.radius_miles)}): "
            f"{results.total} match(es), showing {len(results.facilities)}."
        )
    if results.message:
        lines.append(results.message)
    for i, hit in enumerate(results.facilities[:TEXT_ROWS], 1):
        lines.append(f"{i}. {format_hit(hit)}")
    if len(results.facilities) > TEXT_ROWS:
        lines.append(f"… and {len(results.facilities) - TEXT_ROWS} more (see the structured results).")
    return "\n".join(lines)
