"""Flags ("accredited", "no transportation", "sin transporte") and tags ("infants", "bebés",
"my 8-month-old" when the tags map a stated age). Flags go first: "after-school" holds
"school", "pre-k program" holds "pre-k"."""

from __future__ import annotations

import re

from agent.registry.parsing.spec import ParserSpec, TagPatterns
from agent.registry.parsing.state import Parse

_STATED_AGE = re.compile(r"\b(?P<n>\d{1,2})[\s-]*(?P<unit>years?|yrs?|months?|mos?)[\s-]*olds?\b")


def take_flags(st: Parse, spec: ParserSpec) -> None:
    for pattern, flag in spec.flags:
        def _flag(m: re.Match, flag: str = flag) -> None:
            st.values[flag] = not m.group("neg")

        st.take(pattern, _flag)


def _value_for_age(months: int, ages: list[tuple[str, int | None]]) -> str | None:
    for value, under in ages:
        if under is not None and months < under:
            return value
    rest = [value for value, under in ages if under is None]
    return rest[-1] if rest else None


def take_tags(st: Parse, spec: ParserSpec) -> None:
    for tags in spec.tags:
        _take_one(st, tags)


def _take_one(st: Parse, tags: TagPatterns) -> None:
    found: list[str] = []

    def _age(m: re.Match) -> bool | None:
        months = int(m.group("n")) * (1 if m.group("unit").startswith("mo") else 12)
        value = _value_for_age(months, tags.ages)
        if value is None:
            return False
        if value not in found:
            found.append(value)
        st.read_as(m.group(0).strip(), value)
        return None

    if tags.ages:
        st.take(_STATED_AGE, _age)
    for pattern, value in tags.values:
        st.take(pattern, lambda m, value=value: found.append(value) if value not in found else None)
    if found:
        st.values[tags.name] = [v for v in tags.order if v in found]
