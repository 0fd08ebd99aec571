"""Offline geocoding: zip code, city, county or "lat,lon" -> coordinates.

Two sources, both offline: the registry itself (centroid of its facilities per city and
county — `KnownPlaces`) and the `zipcodes` package, which ships every US zip code with
its city, county and centroid. Names are matched case-insensitively; typos get fuzzy
suggestions (rapidfuzz), never a silent empty result.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import zipcodes
from rapidfuzz import fuzz, process

from agent.facilities.registry import Facility, norm_key, title_case

EARTH_RADIUS_MILES = 3958.7613
METERS_PER_MILE = 1609.344

PlaceKind = Literal["zip", "city", "county", "point"]


def haversine_miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(min(1.0, math.sqrt(h)))


@dataclass(frozen=True)
class Place:
    name: str  # display name: "78702", "Richland Hills", "Travis County", "30.27,-97.74"
    kind: PlaceKind
    lat: float
    lon: float


class UnknownPlace(ValueError):
    """A place name or zip the geocoder cannot place; the message is meant for users."""

    def __init__(self, text: str, suggestions: list[str] | None = None) -> None:
        self.text = text
        self.suggestions = suggestions or []
        super().__init__(unknown_place_message(text, self.suggestions))


def unknown_place_message(text: str, suggestions: list[str]) -> str:
    msg = f"I don't know where '{text}' is"
    if len(suggestions) == 1:
        return f"{msg} — did you mean {suggestions[0]}?"
    if suggestions:
        return f"{msg} — did you mean {', '.join(suggestions[:-1])} or {suggestions[-1]}?"
    return f"{msg}. Try a zip code, a city or county name, or 'lat,lon'."


@dataclass
class _Centroid:
    name: str
    lat_sum: float = 0.0
    lon_sum: float = 0.0
    n: int = 0  # points averaged
    facilities: int = 0

    def add(self, lat: float, lon: float) -> None:
        self.lat_sum += lat
        self.lon_sum += lon
        self.n += 1

    def place(self, kind: PlaceKind) -> Place | None:
        if not self.n:
            return None
        return Place(self.name, kind, self.lat_sum / self.n, self.lon_sum / self.n)


@dataclass
class KnownPlaces:
    """City and county names of the registry (keys are `norm_key`s) with their centroids."""

    cities: dict[str, _Centroid] = field(default_factory=dict)
    counties: dict[str, _Centroid] = field(default_factory=dict)
    zips: dict[str, _Centroid] = field(default_factory=dict)

    @classmethod
    def from_records(cls, records: Iterable[tuple[str, str, str, float | None, float | None]]) -> "KnownPlaces":
        """From (city, county, zip5, lat, lon) tuples — what a registry scroll returns."""
        places = cls()
        for city, county, zip5, lat, lon in records:
            entries = (
                (places.cities, norm_key(city), title_case(norm_key(city))),
                (places.counties, norm_key(county), title_case(norm_key(county)) + " County"),
                (places.zips, zip5, zip5),
            )
            for table, key, display in entries:
                if not key:
                    continue
                entry = table.setdefault(key, _Centroid(display))
                entry.facilities += 1
                if lat is not None and lon is not None:
                    entry.add(lat, lon)
        return places

    @classmethod
    def from_facilities(cls, facilities: Iterable[Facility]) -> "KnownPlaces":
        return cls.from_records(
            (f.city, f.county, f.zip5, f.location.lat if f.location else None, f.location.lon if f.location else None)
            for f in facilities
        )

@dataclass
class _StateIndex:
    cities: dict[str, _Centroid]
    counties: dict[str, _Centroid]


@lru_cache(maxsize=8)
def state_index(state: str) -> _StateIndex:
    """City and county centroids of one state from the zipcodes package (loaded once, ~1 s)."""
    cities: dict[str, _Centroid] = {}
    counties: dict[str, _Centroid] = {}
    for z in zipcodes.filter_by(state=state.upper()):
        try:
            lat, lon = float(z["lat"]), float(z["long"])
        except (KeyError, TypeError, ValueError):
            continue
        for table, raw in ((cities, z.get("city") or ""), (counties, z.get("county") or "")):
            key = norm_key(raw)
            if key:
                suffix = " County" if table is counties else ""
                table.setdefault(key, _Centroid(title_case(key) + suffix)).add(lat, lon)
    return _StateIndex(cities, counties)


_LATLON = re.compile(r"^\s*(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)\s*$")
_ZIP = re.compile(r"^\s*(\d{5})(?:-\d{4})?\s*$")
_STATE_SUFFIX = re.compile(r",?\s+(?:tx|texas)\.?$", re.I)


def parse_latlon(text: str) -> tuple[float, float] | None:
    m = _LATLON.match(text)
    if not m:
        return None
    lat, lon = float(m.group(1)), float(m.group(2))
    if -90 <= lat <= 90 and -180 <= lon <= 180:
        return lat, lon
    return None


class Geocoder:
    """Resolves a user's place text using the registry first, then the state's zip data."""

    def __init__(self, known: KnownPlaces, state: str = "TX") -> None:
        self.known = known
        self.state = state.upper()

    def zip_place(self, zip5: str) -> Place | None:
        hits = zipcodes.matching(zip5) if zipcodes.is_real(zip5) else []
        if hits:
            return Place(zip5, "zip", float(hits[0]["lat"]), float(hits[0]["long"]))
        entry = self.known.zips.get(zip5)
        return entry.place("zip") if entry else None

    def city_place(self, key: str) -> Place | None:
        entry = self.known.cities.get(key)
        if entry and entry.n:
            return entry.place("city")
        state = state_index(self.state).cities.get(key) if self.state else None
        return state.place("city") if state else None

    def county_place(self, key: str) -> Place | None:
        entry = self.known.counties.get(key)
        if entry and entry.n:
            return entry.place("county")
        state = state_index(self.state).counties.get(key) if self.state else None
        return state.place("county") if state else None

    def resolve(self, text: str) -> Place:
        """Place for `text` or UnknownPlace with suggestions."""
        raw = text.strip()
        if not raw:
            raise UnknownPlace(text)
        latlon = parse_latlon(raw)
        if latlon:
            return Place(f"{latlon[0]:.4f},{latlon[1]:.4f}", "point", *latlon)
        zm = _ZIP.match(raw)
        if zm:
            place = self.zip_place(zm.group(1))
            if place:
                return place
            raise UnknownPlace(raw, [f"zip code {z}" for z in self._near_zips(zm.group(1))])
        name = _STATE_SUFFIX.sub("", raw)
        is_county = bool(re.search(r"\bcounty$", name, re.I))
        key = norm_key(name)
        place = None if is_county else self.city_place(key)
        place = place or self.county_place(key)
        if place:
            return place
        raise UnknownPlace(raw, self.suggest(key, county=is_county))

    def suggest(self, key: str, *, county: bool = False, limit: int = 3) -> list[str]:
        """Display names of places that look like `key` (registry places first)."""
        pools: list[dict[str, _Centroid]] = []
        if not county:
            pools.append(self.known.cities)
        pools.append(self.known.counties)
        if self.state:
            idx = state_index(self.state)
            if not county:
                pools.append(idx.cities)
            pools.append(idx.counties)
        out: list[str] = []
        for pool in pools:
            for name, _score, _ in process.extract(key, list(pool), scorer=fuzz.WRatio, limit=limit, score_cutoff=75):
                display = pool[name].name
                if display not in out:
                    out.append(display)
            if len(out) >= limit:
                break
        return out[:limit]

    def _near_zips(self, zip5: str) -> list[str]:
        return sorted(z for z in self.known.zips if z[:3] == zip5[:3])[:3]
