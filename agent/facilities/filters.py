"""Facility search arguments -> exact Qdrant payload filters, places resolved against the registry.

City, county and zip filters use the normalised keys stored with every facility; a place
the registry does not list but the offline gazetteer knows becomes a geo-radius search
around it (with a note), and an unknown place a message with suggestions instead of an
empty list.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from qdrant_client import models

from agent.facilities.facility import norm_key
from agent.facilities.geocode import METERS_PER_MILE, Geocoder, Place, UnknownPlace
from agent.facilities.places import known_places
from agent.facilities.schema import FEATURE_FLAGS, FacilitySearchArgs
from agent.runtime import Runtime


def _minutes(hhmm: str) -> int:
    hour, minute = hhmm.split(":")
    return int(hour) * 60 + int(minute)


def _match(key: str, value) -> models.FieldCondition:
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


@dataclass
class Resolved:
    conditions: list[models.Condition] = field(default_factory=list)
    near: Place | None = None
    radius_miles: float | None = None
    notes: list[str] = field(default_factory=list)
    message: str | None = None  # set when the search cannot run (unknown place)


async def resolve(runtime: Runtime, args: FacilitySearchArgs, collection: str) -> Resolved:
    """Turn args into Qdrant conditions, resolving places against the registry."""
    places = await known_places(runtime, collection)
    geocoder = Geocoder(places, runtime.settings.facilities_state)
    out = Resolved()
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
