"""The field types a registry declaration may use, one model each (`type:` picks it).

A field reads one CSV column (`column`, default its own name), is stored in the record's
payload under its name, and, for the filter types (place, tags, flag with `ask`, number,
hours, days, geo), becomes an argument of the search the model and the parser fill in.
Words people use are regular expressions matched on whole words of the lower-cased message
(plain words work as written); phrases of numbers (`before`, `units`...) are plain phrases.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator


def _check_patterns(patterns: list[str]) -> list[str]:
    for i, pattern in enumerate(patterns):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"entry {i + 1} ({pattern!r}) is not a valid regular expression: {exc}") from None
    return patterns


class _Field(BaseModel):
    model_config = ConfigDict(extra="forbid")

    column: str | None = None  # the CSV header (default: the field's name)
    required: bool = False  # a row without it is reported and skipped
    label: str | None = None  # how answers name it (default: the name with spaces)


class IdField(_Field):
    """The record's identifier: unique per row, the point id, the eval's expected values."""

    type: Literal["id"]
    required: bool = True


class TextField(_Field):
    """Text shown with a record (address, phone, website...); `keyword` is the same."""

    type: Literal["text", "keyword"]


class DateField(_Field):
    """A date ('2015-01-16', '01/16/2015'), stored as YYYY-MM-DD."""

    type: Literal["date"]


class NameField(_Field):
    """The record's name: the title of results, and free text the search ranks names by (`query`)."""

    type: Literal["name"]
    required: bool = True
    ask: str | None = None  # the `query` argument's description for the model


class PlaceField(_Field):
    """A place the record is in, at one level of the gazetteer (`city`, `county`, `zip`); names
    are matched against the registry's own values first, then the gazetteer's."""

    type: Literal["place"]
    level: str | None = None  # the gazetteer's level; none: the registry's own values only
    suffix: str | None = None  # the word that marks this level after a name ("County")
    abbreviations: list[str] = Field(default_factory=list)  # also mark it in a message ("Co.")
    key: str | None = None  # payload key of the normalised value (default: NAME_key)
    around: bool = False  # a place the registry lacks but the gazetteer knows: search around it
    noun: str | None = None  # how messages name the level ("city", "zip code"; default: the name)
    ask: str | None = None  # the argument's description for the model


class TagValue(BaseModel):
    model_config = ConfigDict(extra="forbid")

    csv: list[str] | None = None  # a CSV entry starting with one of these is this value (default: the value)
    label: str | None = None  # how a summary names it ("infant care"; default: the value)
    words: list[str] = Field(default_factory=list)  # how people say it (regular expressions)
    age_under_months: int | None = None  # a stated age ("my 8-month-old") below this is this value

    @field_validator("words")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return _check_patterns(value)


class TagsField(_Field):
    """A list of enumerated values (age groups served, services offered); a search lists the
    values a record must have, all of them."""

    type: Literal["tags"]
    values: dict[str, TagValue]
    noun: str | None = None  # one value, in words ("age group")
    ask: str | None = None

    @field_validator("values", mode="before")
    @classmethod
    def _short_values(cls, value):
        """`values: [a, b]` or a value with no settings (`a:`) is allowed."""
        if isinstance(value, list):
            return {str(v): {} for v in value}
        if isinstance(value, dict):
            return {str(k): (v if v is not None else {}) for k, v in value.items()}
        return value


class FlagField(_Field):
    """A Y/N feature; with `ask` a search filter (true: must have, false: must not)."""

    type: Literal["flag"]
    ask: str | None = None
    words: list[str] = Field(default_factory=list)  # how people say it (regular expressions)

    @field_validator("words")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return _check_patterns(value)


class NumberWords(BaseModel):
    model_config = ConfigDict(extra="forbid")

    units: list[str] = Field(default_factory=list)  # after the number: "150 kids", "over 100 children"
    names: list[str] = Field(default_factory=list)  # the number's own name: "capacity 150", "150+ capacity"
    before: list[str] = Field(default_factory=list)  # before the number: "room for 40", "holds 100"
    after_plus: list[str] = Field(default_factory=list)  # read only right after "N+": "150+ child care"


class NumberField(_Field):
    """A whole number; `filter: min` gives `min_NAME` ("150+ kids"), `max` gives `max_NAME`."""

    type: Literal["number"]
    filter: Literal["min", "max", "range"] | None = None
    ask: str | None = None  # the min_NAME description
    ask_max: str | None = None  # the max_NAME description
    words: NumberWords = Field(default_factory=NumberWords)


class HoursWords(BaseModel):
    model_config = ConfigDict(extra="forbid")

    open_until: list[str] = Field(default_factory=list)  # more ways to say "open until" (regular expressions)
    open_at: list[str] = Field(default_factory=list)  # more ways to say "open at/by" (regular expressions)

    @field_validator("open_until", "open_at")
    @classmethod
    def _patterns(cls, value: list[str]) -> list[str]:
        return _check_patterns(value)


class HoursField(_Field):
    """Opening hours ("07:00 AM-06:00 PM"): `open_at` and `open_until` filters."""

    type: Literal["hours"]
    ask_open_at: str | None = None
    ask_open_until: str | None = None
    words: HoursWords = Field(default_factory=HoursWords)


class DaysField(_Field):
    """Days of the week open ("MonTueWedThuFri", "Mon-Fri"): the `days` filter."""

    type: Literal["days"]
    ask: str | None = None


class GeoField(_Field):
    """The record's point, from two columns: `near` a place within `radius_miles`."""

    type: Literal["geo"]
    latitude: str = "latitude"  # CSV header of the latitude
    longitude: str = "longitude"
    ask: str | None = None  # the `near` description
    radius_ask: str | None = None  # the `radius_miles` description


AnyField = Annotated[
    Union[IdField, TextField, DateField, NameField, PlaceField, TagsField, FlagField, NumberField, HoursField,
          DaysField, GeoField],
    Field(discriminator="type"),
]
FIELD_TYPES = ("id", "text", "keyword", "date", "name", "place", "tags", "flag", "number", "hours", "days", "geo")


def label_of(name: str, field: _Field) -> str:
    return field.label or name.replace("_", " ")
