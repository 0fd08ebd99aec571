"""Facility search results as text: one line per facility for the model, one line saying
how a search was understood ('infant care · within 10 mi of 78702')."""

from __future__ import annotations

from agent.facilities.facility import FEATURE_LABELS, norm_key, title_case
from agent.facilities.geocode import Place
from agent.facilities.schema import (
    FEATURE_FLAGS,
    WEEKDAYS,
    FacilityHit,
    FacilityResults,
    FacilitySearchArgs,
)

TEXT_ROWS = 25  # rows listed in the compact text for the model


_AGE_LABELS = {"infant": "infant care", "toddler": "toddlers", "pre-k": "pre-k ages", "school": "school-age"}


def feature_label(flag: str) -> str:
    return FEATURE_LABELS.get(flag, flag.replace("_", " "))


def describe_args(args: FacilitySearchArgs, near: Place | None = None, radius: float | None = None) -> str:
    """One line saying how a search was understood: 'infant care · within 10 mi of 78702'."""
    parts: list[str] = [_AGE_LABELS[a] for a in args.ages]
    for flag in FEATURE_FLAGS:
        value = getattr(args, flag)
        if value is True:
            parts.append(feature_label(flag))
        elif value is False:
            parts.append(f"no {feature_label(flag)}")
    if args.min_capacity is not None:
        parts.append(f"capacity {args.min_capacity}+")
    if args.open_at:
        parts.append(f"open by {args.open_at}")
    if args.open_until:
        parts.append(f"open until {args.open_until}")
    if args.days:
        parts.append(f"open {days_label(args.days)}")
    if args.city:
        parts.append(f"in {title_case(args.city)}")
    if args.county:
        county = title_case(norm_key(args.county))
        parts.append(f"in {county} County")
    if args.zip:
        parts.append(f"zip {args.zip}")
    if args.near or near:
        miles = radius or args.radius_miles
        where = near.name if near else args.near
        parts.append(f"within {miles:g} mi of {where}" if miles else f"near {where}")
    if args.query:
        parts.append(f'matching "{args.query}"')
    if args.limit == 0:
        parts.append("all results")
    return " · ".join(parts) or "all facilities"


def days_label(days: list[str]) -> str:
    """['mon', ..., 'fri'] -> 'Mon-Fri'; other sets are listed ('Mon, Wed, Sat')."""
    names = [d.title() for d in days]
    idx = [WEEKDAYS.index(d) for d in names if d in WEEKDAYS]
    if len(idx) >= 3 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{WEEKDAYS[idx[0]]}-{WEEKDAYS[idx[-1]]}"
    return ", ".join(names)


def format_hit(hit: FacilityHit) -> str:
    where = ", ".join(x for x in (hit.address, title_case(hit.city), hit.zip) if x)
    bits = [f"{hit.name} (#{hit.operation_number})", where]
    if hit.distance_miles is not None:
        bits.append(f"{hit.distance_miles:.1f} mi")
    if hit.phone:
        bits.append(hit.phone)
    bits.append(hit.hours or "hours not listed")
    if hit.days:
        bits.append(days_label(hit.days))
    if hit.ages:
        bits.append("ages " + "/".join(hit.ages))
    if hit.capacity is not None:
        bits.append(f"capacity {hit.capacity}")
    if hit.features:
        bits.append(", ".join(feature_label(f) for f in hit.features))
    return " · ".join(bits)


def format_results(results: FacilityResults) -> str:
    """Compact text for the model: one line per facility, capped at TEXT_ROWS lines."""
    lines: list[str] = []
    if results.args is not None:
        lines.append(
            f"Facility search ({describe_args(results.args, results.near, results.radius_miles)}): "
            f"{results.total} match(es), showing {len(results.facilities)}."
        )
    if results.message:
        lines.append(results.message)
    for i, hit in enumerate(results.facilities[:TEXT_ROWS], 1):
        lines.append(f"{i}. {format_hit(hit)}")
    if len(results.facilities) > TEXT_ROWS:
        lines.append(f"… and {len(results.facilities) - TEXT_ROWS} more (see the structured results).")
    return "\n".join(lines)
