"""The places of a registry: its place fields' roles, the names its records use (with their
centroids), and what a resolved place is.

Name levels (city, county) are matched by name, the first of them is where an unknown "in X"
goes; code levels (zip) by their digits. `KnownPlaces` is counted at ingest from the records
that changed (a record that leaves takes its places' counts and coordinates away, one that
enters adds them), saved beside the store and read by the `Registry` (which caches it); keys
are `Keys.norm` forms.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.registry.declaration import Declaration
from agent.registry.fields import PlaceField, label_of
from agent.registry.gazetteer import Centroid
from agent.registry.keys import Keys, title_case
from agent.registry.records import place_key

if TYPE_CHECKING:
    from agent.prompts import PromptSet


@dataclass(frozen=True)
class Place:
    name: str  # display name: "78702", "Richland Hills", "Travis County", "30.27,-97.74"
    kind: str  # the level ("city", "zip"…) or "point"
    lat: float
    lon: float


class UnknownPlace(ValueError):
    """A place name or code the geocoder cannot place, with the nearest known names; what people
    read is said from it in their language (`Resolver.unknown`)."""

    def __init__(self, text: str, suggestions: list[str] | None = None) -> None:
        self.text = text
        self.suggestions = suggestions or []
        near = f" (near: {', '.join(self.suggestions)})" if self.suggestions else ""
        super().__init__(f"unknown place {text!r}{near}")


@dataclass(frozen=True)
class PlaceLevels:
    """The declaration's place fields by role."""

    fields: dict[str, PlaceField]
    names: tuple[str, ...]  # name levels, in declaration order (the first: an unknown "in X")
    codes: tuple[str, ...]  # code levels (zip)
    keys: Keys
    has_geo: bool
    geo: str | None = None  # the field holding a record's {lat, lon}

    @classmethod
    def of(cls, decl: Declaration, keys: Keys) -> "PlaceLevels":
        places = decl.places
        names = tuple(n for n, p in places.items() if p.level != "zip")
        codes = tuple(n for n, p in places.items() if p.level == "zip")
        return cls(places, names, codes, keys, decl.geo is not None, decl.geo[0] if decl.geo else None)

    def stored_fields(self) -> list[str]:
        """The payload fields a record's places are read from (names raw, codes by their key)."""
        return [*(self._stored(n) for n in self.fields), *([self.geo] if self.geo else [])]

    def _stored(self, name: str) -> str:
        return name if name in self.names else self.key_field(name)

    def located(self, record: dict[str, Any]) -> tuple[dict[str, Any], float | None, float | None]:
        """(place values, lat, lon) of a record or a stored payload."""
        loc = (record.get(self.geo) or {}) if self.geo else {}
        return {n: record.get(self._stored(n)) or "" for n in self.fields}, loc.get("lat"), loc.get("lon")

    def noun(self, name: str) -> str:
        spec = self.fields[name]
        return spec.noun or label_of(name, spec)

    def key_field(self, name: str) -> str:
        return place_key(name, self.fields[name])

    def display(self, name: str, key: str) -> str:
        suffix = self.fields[name].suffix
        return title_case(key) + (f" {suffix}" if suffix else "")

    def hint(self, prompts: "PromptSet") -> str:
        """What to try instead of an unknown place: "a zip code, a city or county name, or 'lat,lon'"."""
        return prompts.text("registry_place_hint", codes=[self.noun(c) for c in self.codes],
                            names=[self.noun(n) for n in self.names], geo=self.has_geo)


@dataclass
class KnownPlaces:
    """The registry's place names per place field (keys -> centroid of their records)."""

    fields: dict[str, dict[str, Centroid]] = field(default_factory=dict)

    def get(self, name: str) -> dict[str, Centroid]:
        return self.fields.get(name, {})

    def to_json(self) -> dict[str, Any]:
        return {name: {key: [c.name, c.lat_sum, c.lon_sum, c.n, c.records] for key, c in entries.items()}
                for name, entries in self.fields.items()}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "KnownPlaces":
        return cls({name: {key: Centroid(str(v[0]), float(v[1]), float(v[2]), int(v[3]), int(v[4]))
                           for key, v in entries.items()} for name, entries in data.items()})

    @classmethod
    def from_records(cls, levels: PlaceLevels, records: Iterable[tuple[dict[str, Any], float | None, float | None]]
                     ) -> "KnownPlaces":
        """From (place values, lat, lon): the raw names, and each code level's stored key."""
        places = cls({name: {} for name in levels.fields})
        places.count(levels, records)
        return places

    def count(self, levels: PlaceLevels, records: Iterable[tuple[dict[str, Any], float | None, float | None]],
              sign: int = 1) -> None:
        """Add (sign=1) or take away (sign=-1) records given as (place values, lat, lon); a
        place no record names any more is forgotten."""
        for values, lat, lon in records:
            for name in levels.fields:
                raw = str(values.get(name) or "")
                key = raw if name in levels.codes else levels.keys.norm(raw)
                if not key:
                    continue
                entries = self.fields.setdefault(name, {})
                display = key if name in levels.codes else levels.display(name, key)
                entry = entries.setdefault(key, Centroid(display))
                entry.records += sign
                if lat is not None and lon is not None:
                    entry.lat_sum += sign * lat
                    entry.lon_sum += sign * lon
                    entry.n += sign
                if entry.records <= 0:
                    del entries[key]
