"""CSV rows -> typed records (plain dicts, as stored), with the row errors of a file.

The declaration says which column each field reads and how it is typed; unmapped columns are
kept as text under `extra`. A row that cannot be typed is reported with its line number and
skipped; the rest still load. Point ids derive from the registry's name and the record's id,
and a content hash covers every stored value, so a re-ingest writes only what changed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import re
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent.registry import values as parse
from agent.registry.declaration import Declaration
from agent.registry.fields import (
    DateField,
    DaysField,
    FlagField,
    GeoField,
    HoursField,
    NumberField,
    PlaceField,
    TagsField,
    label_of,
)
from agent.registry.keys import CODE_RE, Keys
from agent.registry.template import LABELS, compile_pieces


@dataclass
class RowError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParsedRows:
    source: str
    records: list[dict[str, Any]] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    rows: int = 0
    unparsed_ids: set[str] = field(default_factory=set)  # ids of bad rows: their stored version stays


class RegistryFormatError(ValueError):
    """The file cannot be read as this registry at all (missing required columns, not CSV)."""


def place_key(name: str, place: PlaceField) -> str:
    return place.key or f"{name}_key"


class RecordSchema:
    """How one declaration types, identifies and describes its records."""

    def __init__(self, decl: Declaration) -> None:
        self.decl = decl
        self.keys = Keys.for_suffixes([p.suffix for p in decl.places.values() if p.suffix])
        self.flag_names = list(decl.flags)
        self._description = compile_pieces(decl.display.description)
        self._days = decl.days[0] if decl.days else None
        self._flag_labels = {f: label_of(f, decl.fields[f]) for f in self.flag_names}
        self._labels = {name: {v: spec.label or v for v, spec in tags.values.items()} for name, tags in decl.tags.items()}
        self._tag_prefixes = {
            name: [(p.lower(), value) for value, spec in tags.values.items() for p in (spec.csv or [value])]
            for name, tags in decl.tags.items()
        }

    # --- identity ------------------------------------------------------------------------
    def point_id(self, record_id: str) -> str:
        """Deterministic: re-ingesting the same registry overwrites, never duplicates."""
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"askdesk-{self.decl.name}:{record_id}"))

    @staticmethod
    def content_hash(record: dict[str, Any]) -> str:
        """Changes when any stored value changes (keys sorted: independent of field order)."""
        return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:16]

    def flags_of(self, values: dict[str, Any]) -> list[str]:
        return [name for name in self.flag_names if values.get(name)]

    def template_values(self, values: dict[str, Any], distance: float | None = None) -> dict[str, Any]:
        """A record's values as display templates read them (days as 'Mon-Fri', the built-ins)."""
        out = dict(values)
        days = self._days
        if days and isinstance(out.get(days), list):
            out[days] = parse.days_label(out[days]) if out[days] else ""
        flags = self.flags_of(values)
        out["flags"] = [self._flag_labels[f] for f in flags]
        out["flag_names"] = [f.replace("_", " ") for f in flags]
        out["distance"] = distance
        out[LABELS] = self._labels
        return out

    def description(self, record: dict[str, Any]) -> str:
        """Short text embedded for name and description matches."""
        values = self.template_values(record)
        parts = [p.render(values) for p in self._description]
        return ". ".join(p for p in parts if p) or str(record.get(self.decl.name_field, ""))

    # --- one row -------------------------------------------------------------------------
    def read(self, row: dict[str, str]) -> dict[str, Any]:
        decl = self.decl

        def get(name: str) -> str:
            return (row.get(decl.column(name)) or "").strip()

        def typed(column: str, fn, *raw):
            try:
                return fn(*raw)
            except ValueError as exc:
                raise ValueError(f"{column}: {exc}") from None

        for name, spec in decl.fields.items():
            if spec.required and not isinstance(spec, GeoField) and not get(name):
                raise ValueError(f"missing {decl.column(name)!r}")
        record: dict[str, Any] = {}
        for name, spec in decl.fields.items():
            if isinstance(spec, (HoursField, GeoField)):
                continue
            fn = self._parser(name, spec)
            record[name] = typed(decl.column(name), fn, get(name)) if fn else get(name)
        for name, spec in decl.places.items():
            raw = get(name)
            if spec.level == "zip":
                code = re.match(CODE_RE, raw)
                if raw and not code:
                    raise ValueError(f"bad {spec.noun or label_of(name, spec)} {raw!r}")
                record[place_key(name, spec)] = code.group(0) if code else ""
        if decl.hours:
            name = decl.hours[0]
            record["open_minutes"], record["close_minutes"] = typed(decl.column(name), parse.parse_hours, get(name))
            record[name] = get(name)
        if decl.geo:
            name, geo = decl.geo
            lat = typed(geo.latitude, parse.parse_coordinate, (row.get(geo.latitude) or "").strip(), 90)
            lon = typed(geo.longitude, parse.parse_coordinate, (row.get(geo.longitude) or "").strip(), 180)
            record[name] = typed(f"{geo.latitude}/{geo.longitude}", parse.parse_location, lat, lon)
        for name, spec in decl.places.items():
            if spec.level != "zip":
                record[place_key(name, spec)] = self.keys.norm(str(record[name]))
        mapped = self.columns()
        record["extra"] = {k: (v or "").strip() for k, v in row.items() if k and k not in mapped and (v or "").strip()}
        return record

    def columns(self) -> set[str]:
        out = {self.decl.column(n) for n, f in self.decl.fields.items() if not isinstance(f, GeoField)}
        if self.decl.geo:
            out |= {self.decl.geo[1].latitude, self.decl.geo[1].longitude}
        return out

    def _parser(self, name: str, spec):
        if isinstance(spec, TagsField):
            order, noun = list(spec.values), spec.noun or label_of(name, spec)
            return lambda v: parse.parse_tags(v, self._tag_prefixes[name], order, noun)
        return {DaysField: parse.parse_days, NumberField: parse.parse_int, FlagField: parse.parse_bool,
                DateField: parse.parse_date}.get(type(spec))

    # --- a file --------------------------------------------------------------------------
    def parse_text(self, text: str, *, source: str) -> ParsedRows:
        decl = self.decl
        reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
        headers = set(reader.fieldnames or [])
        missing = [decl.column(n) for n, f in decl.fields.items()
                   if f.required and not isinstance(f, GeoField) and decl.column(n) not in headers]
        if missing:
            where = f" ({decl.path})" if decl.path else ""
            raise RegistryFormatError(
                f"{source}: missing required column(s) {missing}; found {sorted(headers)}. "
                f"Set each field's `column` in the registry's declaration{where} to your file's header."
            )
        parsed = ParsedRows(source=source)
        id_name = decl.id_field
        id_label = label_of(id_name, decl.fields[id_name])
        seen: dict[str, int] = {}
        line = reader.line_num
        for row in reader:
            line_start = line + 1
            line = reader.line_num
            parsed.rows += 1
            if None in row:
                parsed.errors.append(RowError(line_start, f"{len(row[None])} more value(s) than columns"))
                continue
            try:
                record = self.read(row)
            except ValueError as exc:
                parsed.errors.append(RowError(line_start, str(exc)))
                if (row.get(decl.column(id_name)) or "").strip():
                    parsed.unparsed_ids.add((row.get(decl.column(id_name)) or "").strip())
                continue
            rid = record[id_name]
            if rid in seen:
                parsed.errors.append(RowError(line_start, f"duplicate {id_label} {rid} (first on line {seen[rid]})"))
                continue
            seen[rid] = line_start
            parsed.records.append(record)
        return parsed

    def parse_file(self, path: Path) -> ParsedRows:
        path = Path(path)
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            text = path.read_text(encoding="latin-1")
        return self.parse_text(text, source=path.name)
