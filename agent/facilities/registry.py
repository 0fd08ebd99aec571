"""Facility registry CSV -> typed `Facility` records.

The column mapping is configuration (`Settings.facilities_columns`), so another state's
registry loads without code changes: each Facility field reads the CSV header named in
`DEFAULT_COLUMNS` unless the mapping says otherwise. Columns the mapping does not name
are kept as text in `Facility.extra`. A row that cannot be typed is reported with its
line number and skipped; the rest still load.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path

from pydantic import ValidationError

from agent.facilities.facility import (  # noqa: F401  (Facility, FLAGS, GeoPoint, title_case: this module's API)
    AGES,
    FLAGS,
    Facility,
    GeoPoint,
    csv_columns,
    facility_point_id,
    norm_key,
    title_case,
)

# Facility field -> CSV header of the Texas DFPS registry, from the Facility model.
DEFAULT_COLUMNS: dict[str, str] = csv_columns()
REQUIRED_FIELDS = ("operation_number", "name")

_TRUE = {"y", "yes", "true", "t", "1", "x"}
_FALSE = {"n", "no", "false", "f", "0", ""}
_DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_AGE_WORDS = (("infant", "infant"), ("baby", "infant"), ("toddler", "toddler"),
              ("pre", "pre-k"), ("school", "school"))


@dataclass
class RowError:
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}"


@dataclass
class ParsedRegistry:
    source: str
    facilities: list[Facility] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    rows: int = 0
    unparsed_numbers: set[str] = field(default_factory=set)  # operation numbers of bad rows


class RegistryFormatError(ValueError):
    """The file cannot be read as a registry at all (missing required columns, not CSV)."""


# --- value parsers ------------------------------------------------------------------


def parse_bool(value: str) -> bool:
    v = value.strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise ValueError(f"expected Y/N, got {value!r}")


def parse_int(value: str) -> int | None:
    v = value.strip().replace(",", "")
    if not v:
        return None
    try:
        number = float(v)
    except ValueError:
        raise ValueError(f"expected a whole number, got {value!r}") from None
    if number != int(number) or number < 0:
        raise ValueError(f"expected a whole number, got {value!r}")
    return int(number)


def parse_ages(value: str) -> list[str]:
    out: list[str] = []
    for part in re.split(r"[,;/|]", value):
        word = part.strip().lower()
        if not word:
            continue
        for prefix, age in _AGE_WORDS:
            if word.startswith(prefix):
                if age not in out:
                    out.append(age)
                break
        else:
            raise ValueError(f"unknown age group {part.strip()!r}")
    return [a for a in AGES if a in out]


_TIME = re.compile(r"^\s*(\d{1,2})(?::(\d{2}))?\s*([ap])?\.?\s*m?\.?\s*$", re.I)


def parse_time(value: str) -> int:
    """'06:30 AM', '6:30pm', '18:00', '6' -> minutes after midnight."""
    m = _TIME.match(value)
    if not m:
        raise ValueError(f"not a time: {value!r}")
    hour, minute, half = int(m.group(1)), int(m.group(2) or 0), (m.group(3) or "").lower()
    if half:
        if not 1 <= hour <= 12:
            raise ValueError(f"not a time: {value!r}")
        hour = hour % 12 + (12 if half == "p" else 0)
    if hour > 23 or minute > 59:
        raise ValueError(f"not a time: {value!r}")
    return hour * 60 + minute


def parse_hours(value: str) -> tuple[int | None, int | None]:
    v = value.strip()
    if not v:
        return None, None
    parts = re.split(r"\s*(?:-|–|to)\s*", v, maxsplit=1)
    if len(parts) != 2:
        raise ValueError(f"expected hours like '07:00 AM-06:00 PM', got {value!r}")
    return parse_time(parts[0]), parse_time(parts[1])


def parse_days(value: str) -> list[str]:
    """'MonTueWedThuFri', 'Mon-Fri', 'Mon, Wed' -> ['mon', ...]."""
    v = value.strip().lower()
    if not v:
        return []
    span = re.fullmatch(r"([a-z]{3})[a-z]*\s*(?:-|–|to)\s*([a-z]{3})[a-z]*", v)
    if span and span.group(1) in _DAY_NAMES and span.group(2) in _DAY_NAMES:
        i, j = _DAY_NAMES.index(span.group(1)), _DAY_NAMES.index(span.group(2))
        return list(_DAY_NAMES[i : j + 1])
    found = re.findall(r"mon|tue|wed|thu|fri|sat|sun", v)
    if not found:
        raise ValueError(f"expected days like 'MonTueWedThuFri', got {value!r}")
    return [d for d in _DAY_NAMES if d in found]


def parse_coordinate(value: str, limit: float) -> float | None:
    """One latitude (limit 90) or longitude (limit 180) in degrees; blank = unknown."""
    if not value.strip():
        return None
    try:
        number = float(value)
    except ValueError:
        raise ValueError(f"not a number: {value!r}") from None
    if not -limit <= number <= limit:
        raise ValueError(f"out of range (-{limit:g} to {limit:g}): {value!r}")
    return number


def parse_location(lat: float | None, lon: float | None) -> GeoPoint | None:
    if lat is None and lon is None:
        return None
    if lat is None or lon is None:
        raise ValueError("has only one of latitude and longitude")
    return GeoPoint(lat=lat, lon=lon)


def parse_date(value: str) -> str:
    v = value.strip()
    if not v:
        return ""
    for fmt in ("%Y-%m-%d", "%m/%d/%Y", "%Y-%m-%dT%H:%M:%S"):
        try:
            return datetime.strptime(v, fmt).date().isoformat()
        except ValueError:
            continue
    try:
        return date.fromisoformat(v[:10]).isoformat()
    except ValueError:
        raise ValueError(f"not a date: {value!r}") from None


# --- rows -> facilities -------------------------------------------------------------

_PARSERS = {"ages": parse_ages, "days": parse_days, "capacity": parse_int, "last_modified": parse_date,
            **{flag: parse_bool for flag in FLAGS}}



def column_map(overrides: dict[str, str] | None = None) -> dict[str, str]:
    unknown = set(overrides or {}) - set(DEFAULT_COLUMNS)
    if unknown:
        raise RegistryFormatError(
            f"facilities_columns names unknown fields {sorted(unknown)}; known: {sorted(DEFAULT_COLUMNS)}"
        )
    return {**DEFAULT_COLUMNS, **(overrides or {})}


def facility_from_row(row: dict[str, str], columns: dict[str, str]) -> Facility:
    def get(name: str) -> str:
        header = columns[name]
        return (row.get(header) or "").strip()

    def typed(name: str, parse, *raw: str):
        try:
            return parse(*raw)
        except ValueError as exc:
            raise ValueError(f"{columns[name]}: {exc}") from None

    for name in REQUIRED_FIELDS:
        if not get(name):
            raise ValueError(f"missing {columns[name]!r}")
    values: dict[str, object] = {}
    for name in Facility.model_fields:
        if name in DEFAULT_COLUMNS:  # read from a column: typed when it has a parser, else text
            parse = _PARSERS.get(name)
            values[name] = typed(name, parse, get(name)) if parse else get(name)
    zip5 = re.match(r"\d{5}", get("zip"))
    if get("zip") and not zip5:
        raise ValueError(f"bad zip code {get('zip')!r}")
    values["zip5"] = zip5.group(0) if zip5 else ""
    values["open_minutes"], values["close_minutes"] = typed("hours", parse_hours, get("hours"))
    lat = typed("latitude", parse_coordinate, get("latitude"), 90)
    lon = typed("longitude", parse_coordinate, get("longitude"), 180)
    try:
        values["location"] = parse_location(lat, lon)
    except ValueError as exc:
        raise ValueError(f"{columns['latitude']}/{columns['longitude']}: {exc}") from None
    values["city_key"] = norm_key(str(values["city"]))
    values["county_key"] = norm_key(str(values["county"]))
    mapped = set(columns.values())
    values["extra"] = {k: (v or "").strip() for k, v in row.items() if k and k not in mapped and (v or "").strip()}
    return Facility.model_validate(values)


def parse_registry_text(text: str, *, source: str, columns: dict[str, str] | None = None) -> ParsedRegistry:
    cols = column_map(columns)
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    headers = set(reader.fieldnames or [])
    missing = [cols[f] for f in REQUIRED_FIELDS if cols[f] not in headers]
    if missing:
        raise RegistryFormatError(
            f"{source}: missing required column(s) {missing}; found {sorted(headers)}. "
            "Map your registry's headers with the facilities_columns setting."
        )
    # optional columns absent from this registry read as empty
    parsed = ParsedRegistry(source=source)
    seen: dict[str, int] = {}
    line = reader.line_num  # the header's last line
    for row in reader:
        line_start = line + 1
        line = reader.line_num
        parsed.rows += 1
        if None in row:
            parsed.errors.append(RowError(line_start, f"{len(row[None])} more value(s) than columns"))
            continue
        try:
            facility = facility_from_row(row, cols)
        except ValueError as exc:
            parsed.errors.append(RowError(line_start, _error_text(exc)))
            number = (row.get(cols["operation_number"]) or "").strip()
            if number:
                parsed.unparsed_numbers.add(number)
            continue
        if facility.operation_number in seen:
            parsed.errors.append(
                RowError(line_start, f"duplicate operation number {facility.operation_number} (first on line "
                         f"{seen[facility.operation_number]})")
            )
            continue
        seen[facility.operation_number] = line_start
        parsed.facilities.append(facility)
    return parsed


def _error_text(exc: ValueError) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return str(exc)


def parse_registry(path: Path, *, columns: dict[str, str] | None = None) -> ParsedRegistry:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        text = path.read_text(encoding="latin-1")
    return parse_registry_text(text, source=path.name, columns=columns)
