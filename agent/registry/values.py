"""CSV cell -> typed value, one parser per field type; a ValueError's text names what was expected.

Times are minutes after midnight; days are ['mon', …]; dates are YYYY-MM-DD.
"""

from __future__ import annotations

import re
from datetime import date, datetime

_TRUE = {"y", "yes", "true", "t", "1", "x"}
_FALSE = {"n", "no", "false", "f", "0", ""}
DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


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


def parse_tags(value: str, prefixes: list[tuple[str, str]], order: list[str], noun: str) -> list[str]:
    """'Infant, Toddler' -> ['infant', 'toddler']: an entry is the value of the first prefix it
    starts with (`prefixes`: (lower-case prefix, value) in order); the result in `order`."""
    out: list[str] = []
    for part in re.split(r"[,;/|]", value):
        word = part.strip().lower()
        if not word:
            continue
        for prefix, tag in prefixes:
            if word.startswith(prefix):
                if tag not in out:
                    out.append(tag)
                break
        else:
            raise ValueError(f"unknown {noun} {part.strip()!r}")
    return [t for t in order if t in out]


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
    if span and span.group(1) in DAY_NAMES and span.group(2) in DAY_NAMES:
        i, j = DAY_NAMES.index(span.group(1)), DAY_NAMES.index(span.group(2))
        return list(DAY_NAMES[i : j + 1])
    found = re.findall(r"mon|tue|wed|thu|fri|sat|sun", v)
    if not found:
        raise ValueError(f"expected days like 'MonTueWedThuFri', got {value!r}")
    return [d for d in DAY_NAMES if d in found]


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


def parse_location(lat: float | None, lon: float | None) -> dict[str, float] | None:
    if lat is None and lon is None:
        return None
    if lat is None or lon is None:
        raise ValueError("has only one of latitude and longitude")
    return {"lat": lat, "lon": lon}


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


def days_label(days: list[str]) -> str:
    """['mon', ..., 'fri'] -> 'Mon-Fri'; other sets are listed ('Mon, Wed, Sat')."""
    names = [d.title() for d in days]
    idx = [WEEKDAYS.index(d) for d in names if d in WEEKDAYS]
    if len(idx) >= 3 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{WEEKDAYS[idx[0]]}-{WEEKDAYS[idx[-1]]}"
    return ", ".join(names)
