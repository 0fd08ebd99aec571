"""Search arguments -> exact Qdrant payload/geo filters, places resolved against the registry.

Place filters use the normalised keys stored with every record. A place the registry does not
list but the gazetteer knows becomes a radius search around it (with a note) at levels that
allow it (`around: true`), a pointer to `near` at others; an unknown place becomes a message
with suggestions instead of an empty list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import agent.store.models as models
from agent.registry.declaration import Declaration
from agent.registry.geocoder import METERS_PER_MILE, Geocoder
from agent.registry.places import KnownPlaces, Place, UnknownPlace

if TYPE_CHECKING:
    from agent.prompts import PromptSet


def _minutes(hhmm: str) -> int:
    hour, minute = hhmm.split(":")
    return int(hour) * 60 + int(minute)


def _match(key: str, value: Any) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


@dataclass
class Resolved:
    conditions: list[models.Condition] = field(default_factory=list)
    near: Place | None = None
    radius_miles: float | None = None
    notes: list[str] = field(default_factory=list)
    message: str | None = None  # set when the search cannot run (unknown place)


class Resolver:
    def __init__(self, decl: Declaration, known: KnownPlaces, geocoder: Geocoder, prompts: "PromptSet") -> None:
        self.decl, self.known, self.geocoder = decl, known, geocoder
        self.levels = geocoder.levels
        self.one = decl.record.singular
        self.prompts = prompts  # the notes' sentences, in the language being spoken

    def unknown(self, exc: UnknownPlace) -> str:
        """An unknown place said to the person: the nearest names, else what to give instead."""
        return self.prompts.text("registry_unknown_place", place=exc.text, suggestions=exc.suggestions,
                                 hint=self.levels.hint(self.prompts))

    def _moved(self, args: Any) -> dict[str, str | None]:
        """Place arguments, a name given at the first level that only a later one knows moved
        there ("Travis County" given as a city)."""
        values = {n: getattr(args, n) for n in self.levels.fields}
        names = self.levels.names
        first = names[0] if names else None
        if first and values[first]:
            key = self.levels.keys.norm(values[first])
            for other in names[1:]:
                if not values[other] and key in self.known.get(other) and key not in self.known.get(first):
                    values[first], values[other] = None, values[first]
                    break
        return values

    def resolve(self, args: Any) -> Resolved:
        out = Resolved()
        near_text = getattr(args, "near", None)
        radius = getattr(args, "radius_miles", None)
        default_radius = radius or self.decl.radius_miles
        values = self._moved(args)
        for name in self.levels.names:
            value = values[name]
            if not value:
                continue
            key = self.levels.keys.norm(value.split(",")[0] if name == self.levels.names[0] else value)
            if key in self.known.get(name):
                out.conditions.append(_match(self.levels.key_field(name), key))
            elif self.levels.fields[name].around:
                try:
                    place = self.geocoder.resolve(value)
                except UnknownPlace as exc:
                    out.message = self.unknown(exc)
                    return out
                noun = self.levels.noun(name)
                if near_text is None:  # a real place without listed records: search around it
                    near_text = value
                    out.notes.append(self.prompts.text("registry_place_not_listed_around", record=self.one,
                                                       place=place.name, noun=noun, miles=f"{default_radius:g}"))
                else:
                    out.message = self.prompts.text("registry_place_not_listed", record=self.one, place=place.name,
                                                    noun=noun)
                    return out
            else:
                place = self.geocoder.name_place(name, key)
                if place:
                    out.message = self.prompts.text("registry_not_in_place", record=self.one, place=place.name)
                else:
                    out.message = self.unknown(UnknownPlace(value, self.geocoder.suggest(key, level=name)))
                return out
        for name in self.levels.codes:
            value = values[name]
            if not value:
                continue
            noun = self.levels.noun(name)
            m = re.match(r"\s*(\d{5})", value)
            if not m:
                out.message = self.prompts.text("registry_bad_code", value=value, noun=noun)
                return out
            code = m.group(1)
            if code in self.known.get(name) or near_text is not None:
                out.conditions.append(_match(self.levels.key_field(name), code))
            elif self.levels.fields[name].around and self.geocoder.code_place(name, code):
                near_text = code  # a real code without listed records: search around it
                out.notes.append(self.prompts.text("registry_code_not_listed_around", record=self.one, noun=noun,
                                                   code=code, miles=f"{default_radius:g}"))
            else:
                out.message = self.prompts.text("registry_unknown_code", noun=noun, code=code)
                return out
        self._values(args, out.conditions)
        if near_text and self.decl.geo:
            try:
                out.near = self.geocoder.resolve(near_text)
            except UnknownPlace as exc:
                out.message = self.unknown(exc)
                return out
            out.radius_miles = default_radius
            out.conditions.append(models.FieldCondition(key=self.decl.geo[0], geo_radius=models.GeoRadius(
                center=models.GeoPoint(lat=out.near.lat, lon=out.near.lon),
                radius=out.radius_miles * METERS_PER_MILE)))
        return out

    def _values(self, args: Any, cond: list[models.Condition]) -> None:
        decl = self.decl
        for name in decl.tags:
            for value in getattr(args, name):
                cond.append(_match(name, value))
        for name in args.flag_filters:
            value = getattr(args, name)
            if value is not None:
                cond.append(_match(name, bool(value)))
        if decl.days:
            for day in args.days or []:
                cond.append(_match(decl.days[0], day.lower()))  # the payload stores ["mon", "tue", ...]
        for name in decl.numbers:
            low, high = getattr(args, f"min_{name}", None), getattr(args, f"max_{name}", None)
            if low is not None:
                cond.append(models.FieldCondition(key=name, range=models.Range(gte=low)))
            if high is not None:
                cond.append(models.FieldCondition(key=name, range=models.Range(lte=high)))
        if decl.hours:
            if args.open_at:
                cond.append(models.FieldCondition(key="open_minutes", range=models.Range(lte=_minutes(args.open_at))))
            if args.open_until:
                cond.append(models.FieldCondition(key="close_minutes", range=models.Range(gte=_minutes(args.open_until))))
