"""Offline geocoding: a code (zip), a place name or "lat,lon" -> coordinates, or suggestions.

Two sources: the registry itself (the centroid of its records per place) and the gazetteer
(the states' zip codes). Names match case-insensitively; a typo gets fuzzy suggestions
(rapidfuzz), never a silent empty result.
"""

from __future__ import annotations

import math
import re

from rapidfuzz import fuzz, process

from agent.registry.gazetteer import Centroid, Gazetteer
from agent.registry.places import KnownPlaces, Place, PlaceLevels, UnknownPlace

EARTH_RADIUS_MILES = 3958.7613
METERS_PER_MILE = 1609.344

_LATLON = re.compile(r"^\s*(-?\d{1,2}(?:\.\d+)?)\s*,\s*(-?\d{1,3}(?:\.\d+)?)\s*$")
_CODE = re.compile(r"^\s*(\d{5})(?:-\d{4})?\s*$")


def haversine_miles(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_MILES * math.asin(min(1.0, math.sqrt(h)))


def parse_latlon(text: str) -> tuple[float, float] | None:
    m = _LATLON.match(text)
    if not m:
        return None
    lat, lon = float(m.group(1)), float(m.group(2))
    if -90 <= lat <= 90 and -180 <= lon <= 180:
        return lat, lon
    return None


def _place(entry: Centroid | None, kind: str) -> Place | None:
    point = entry.point() if entry else None
    return Place(entry.name, kind, *point) if entry and point else None


class Geocoder:
    """Resolves a user's place text: the registry's places first, then the gazetteer's."""

    def __init__(self, known: KnownPlaces, levels: PlaceLevels, gazetteer: Gazetteer | None) -> None:
        self.known = known
        self.levels = levels
        self.gazetteer = gazetteer

    def _gazetteer_level(self, name: str) -> dict[str, Centroid]:
        level = self.levels.fields[name].level
        return self.gazetteer.level(level) if self.gazetteer is not None and level else {}

    def code_place(self, name: str, code: str) -> Place | None:
        point = self.gazetteer.code_point(code) if self.gazetteer is not None else None
        if point:
            return Place(code, name, *point)
        return _place(self.known.get(name).get(code), name)

    def name_place(self, name: str, key: str) -> Place | None:
        entry = self.known.get(name).get(key)
        if entry and entry.n:
            return _place(entry, name)
        return _place(self._gazetteer_level(name).get(key), name)

    def resolve(self, text: str) -> Place:
        """Place for `text` or UnknownPlace with suggestions."""
        raw = text.strip()
        if not raw:
            raise UnknownPlace(text)
        latlon = parse_latlon(raw)
        if latlon:
            return Place(f"{latlon[0]:.4f},{latlon[1]:.4f}", "point", *latlon)
        zm = _CODE.match(raw)
        if zm and self.levels.codes:
            code_field = self.levels.codes[0]
            place = self.code_place(code_field, zm.group(1))
            if place:
                return place
            noun = self.levels.noun(code_field)
            raise UnknownPlace(raw, [f"{noun} {z}" for z in self._near_codes(code_field, zm.group(1))])
        name = self.gazetteer.strip_state(raw) if self.gazetteer is not None else raw
        level = self.suffixed_level(name)
        key = self.levels.keys.norm(name)
        for candidate in ([level] if level else self.levels.names):
            place = self.name_place(candidate, key)
            if place:
                return place
        raise UnknownPlace(raw, self.suggest(key, level=level))

    def suffixed_level(self, name: str) -> str | None:
        """The level a name ends with the suffix of ("Travis County" -> county)."""
        for field_name in self.levels.names:
            suffix = self.levels.fields[field_name].suffix
            if suffix and re.search(r"\b" + re.escape(suffix) + r"$", name, re.I):
                return field_name
        return None

    def suggest(self, key: str, *, level: str | None = None, limit: int = 3) -> list[str]:
        """Display names of places that look like `key` (registry places first)."""
        names = [level] if level else list(self.levels.names)
        pools = [self.known.get(n) for n in names] + [self._gazetteer_level(n) for n in names]
        out: list[str] = []
        for pool in pools:
            for name, _score, _ in process.extract(key, list(pool), scorer=fuzz.WRatio, limit=limit, score_cutoff=75):
                display = pool[name].name
                if display not in out:
                    out.append(display)
            if len(out) >= limit:
                break
        return out[:limit]

    def _near_codes(self, name: str, code: str) -> list[str]:
        return sorted(z for z in self.known.get(name) if z[:3] == code[:3])[:3]
