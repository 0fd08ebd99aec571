"""Offline places: every US zip code with its city, county and centroid (the `zipcodes` package).

A `Gazetteer` knows the cities and counties of the states a declaration names, built on first
use (about half a second per state) and kept by the registries that share it — never in a
module-level cache. Zip codes are known nationwide.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import zipcodes

from agent.registry.keys import Keys, title_case

LEVEL_FIELDS = {"city": "city", "county": "county"}  # gazetteer level -> the zipcodes column


@dataclass
class Centroid:
    """The mean point of a place's records (or zip codes), and how many records name it."""

    name: str
    lat_sum: float = 0.0
    lon_sum: float = 0.0
    n: int = 0  # points averaged
    records: int = 0

    def add(self, lat: float, lon: float) -> None:
        self.lat_sum += lat
        self.lon_sum += lon
        self.n += 1

    def point(self) -> tuple[float, float] | None:
        return (self.lat_sum / self.n, self.lon_sum / self.n) if self.n else None


class Gazetteer:
    def __init__(self, states: list[str], state_names: list[str], keys: Keys, suffixes: dict[str, str]) -> None:
        self.states = [s.upper() for s in states]
        self.keys = keys
        self.suffixes = suffixes  # level -> display word ("county" -> "County")
        names = [re.escape(s.lower()) for s in [*self.states, *state_names]]
        # "Plano, TX" / "Plano Texas" is Plano
        self.state_suffix = re.compile(r",?\s+(?:" + "|".join(names) + r")\.?$", re.I) if names else None
        self._levels: dict[str, dict[str, Centroid]] | None = None

    def signature(self) -> tuple:
        """Registries with the same signature can share one gazetteer."""
        return (tuple(self.states), self.state_suffix.pattern if self.state_suffix else "", self.keys.suffixes,
                tuple(sorted(self.suffixes.items())))

    def level(self, level: str) -> dict[str, Centroid]:
        """key -> centroid of the states' places at `level` (city, county)."""
        if self._levels is None:
            self._levels = self._build()
        return self._levels.get(level, {})

    def _build(self) -> dict[str, dict[str, Centroid]]:
        levels: dict[str, dict[str, Centroid]] = {level: {} for level in LEVEL_FIELDS}
        # one state at a time: `list_all()` would turn all 42,000 US codes into Python dicts and
        # keep them for the process's life (about 100 MB)
        rows = (z for state in dict.fromkeys(self.states) for z in zipcodes.filter_by(state=state))
        for z in rows:
            try:
                lat, lon = float(z["lat"]), float(z["long"])
            except (KeyError, TypeError, ValueError):
                continue
            for level, column in LEVEL_FIELDS.items():
                key = self.keys.norm(z.get(column) or "")
                if key:
                    suffix = f" {self.suffixes[level]}" if level in self.suffixes else ""
                    levels[level].setdefault(key, Centroid(title_case(key) + suffix)).add(lat, lon)
        return levels

    def strip_state(self, text: str) -> str:
        return self.state_suffix.sub("", text) if self.state_suffix else text

    def warm(self) -> None:
        """Read the zip-code data now (~0.3 s the first time), not in the first search for one."""
        self.code_point("00000")

    @staticmethod
    def code_point(code: str) -> tuple[float, float] | None:
        hits = zipcodes.matching(code) if zipcodes.is_real(code) else []
        return (float(hits[0]["lat"]), float(hits[0]["long"])) if hits else None
