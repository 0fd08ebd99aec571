"""The search arguments of a registry, generated from its declaration (pydantic `create_model`).

This is the JSON schema the model sees and the shape the `/`-command parser fills in: `query`
(the name field), one argument per place field, `near`/`radius_miles` (geo), one list per tags
field, one optional bool per flag with an `ask`, `min_`/`max_` per number, `open_at`/
`open_until` (hours), `days`, `limit` — in that order, each described by the declaration.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field, create_model, field_validator

from agent.registry.declaration import Declaration
from agent.registry.values import WEEKDAYS, parse_time

MAX_RESULTS = 1000  # "all" is capped here so one answer stays readable

Weekday = Literal["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]


class SearchArgs(BaseModel):
    """Base of every registry's arguments: what the engine asks of them."""

    flag_filters: ClassVar[tuple[str, ...]] = ()

    def requested_flags(self) -> list[str]:
        return [f for f in self.flag_filters if getattr(self, f) is True]

    def has_criteria(self) -> bool:
        data = self.model_dump(exclude={"limit", "radius_miles"})
        return any(v not in (None, [], "") for v in data.values())


def _check_time(cls, value: str | None) -> str | None:
    if value is None or not value.strip():
        return None
    try:
        minutes = parse_time(value)  # also takes "6:30 am", "18:00", "6"
    except ValueError:
        raise ValueError("expected a time 'HH:MM', e.g. '06:30'") from None
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _day_names(cls, value):
    """'saturday', 'SAT' -> 'Sat' (models vary the spelling); week order, no repeats."""
    if not isinstance(value, list):
        return value
    named = [d[:3].title() if isinstance(d, str) and d.strip()[:3].title() in WEEKDAYS else d
             for d in (v.strip() if isinstance(v, str) else v for v in value)]
    if any(d not in WEEKDAYS for d in named):
        return named  # the Literal check names the bad value
    return [d for d in WEEKDAYS if d in named] or None


def _blank_is_none(cls, value: str | None) -> str | None:
    return value.strip() or None if isinstance(value, str) else value


def _text(description: str | None) -> Any:
    return Field(None, description=description)


def argument_fields(decl: Declaration) -> dict[str, tuple[Any, Any]]:
    one, many = decl.record.singular, decl.record.plural
    out: dict[str, tuple[Any, Any]] = {
        "query": (str | None, _text(decl.fields[decl.name_field].ask  # type: ignore[union-attr]
                                    or f"Free text matched against {one} names and descriptions."))}
    places = sorted(decl.places.items(), key=lambda item: item[1].level == "zip")  # names, then codes
    for name, place in places:
        out[name] = (str | None, _text(place.ask or f"The {name.replace('_', ' ')} the {one} is in."))
    if decl.geo:
        geo = decl.geo[1]
        out["near"] = (str | None, _text(geo.ask or f"Find {many} around this place. Results are sorted by distance."))
        out["radius_miles"] = (float | None, Field(None, gt=0, le=500, description=geo.radius_ask or (
            f"Distance limit in miles for `near` (default {decl.radius_miles:g} when `near` is given).")))
    for name, tags in decl.tags.items():
        kind = Literal[tuple(tags.values)]  # type: ignore[valid-type]
        out[name] = (list[kind], Field(default_factory=list, description=tags.ask or (  # type: ignore[valid-type]
            f"{name.replace('_', ' ').capitalize()} the {one} must have, all of them: {', '.join(tags.values)}.")))
    for name, flag in decl.flags.items():
        if flag.ask:
            out[name] = (bool | None, _text(flag.ask))
    for name, number in decl.numbers.items():
        label = number.label or name.replace("_", " ")
        if number.filter in ("min", "range"):
            ask = number.ask or f"{label.capitalize()} at least this."
            out[f"min_{name}"] = (int | None, Field(None, ge=0, description=ask))
        if number.filter in ("max", "range"):
            ask = number.ask_max or f"{label.capitalize()} at most this."
            out[f"max_{name}"] = (int | None, Field(None, ge=0, description=ask))
    if decl.hours:
        hours = decl.hours[1]
        out["open_at"] = (str | None, _text(hours.ask_open_at or (
            f"Opening time 'HH:MM' (24-hour): the {one} must open at or before it, e.g. '08:00'.")))
        out["open_until"] = (str | None, _text(hours.ask_open_until or (
            f"Closing time 'HH:MM' (24-hour): the {one} must stay open until at least then, e.g. '18:00'.")))
    if decl.days:
        out["days"] = (list[Weekday] | None, _text(decl.days[1].ask or (
            f"Days of the week the {one} must be open on, ALL of them, e.g. ['Sat']. Leave out unless asked.")))
    out["limit"] = (int, Field(10, ge=0, le=MAX_RESULTS, description=decl.tool.limit_ask or (
        f"Most {many} to return; 0 = all matches (when the user asks for all).")))
    return out


def _class_name(decl: Declaration) -> str:
    words = decl.record.singular.replace("-", " ").replace("_", " ").split()
    return "".join(w[:1].upper() + w[1:] for w in words) + "SearchArgs"


def build_args_model(decl: Declaration) -> type[SearchArgs]:
    """`FacilitySearchArgs` for the demo: the same schema, validators and defaults as before."""
    fields = argument_fields(decl)
    validators: dict[str, Any] = {
        "blank_is_none": field_validator(*[n for n in ("query", *decl.places, "near") if n in fields])(_blank_is_none),
    }
    if "open_at" in fields:
        validators["check_time"] = field_validator("open_at", "open_until")(_check_time)
    if "days" in fields:
        validators["day_names"] = field_validator("days", mode="before")(_day_names)
    doc = decl.tool.arguments or (
        f"Search the {decl.record.singular} registry. Every filter given must hold; leave out what the user did "
        "not ask for.")
    model = create_model(_class_name(decl), __base__=SearchArgs, __doc__=doc, __validators__=validators,
                         **fields)  # type: ignore[call-overload]
    model.flag_filters = tuple(n for n, f in decl.flags.items() if f.ask)
    return model
