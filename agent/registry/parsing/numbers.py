"""Numbers with their words ("150+ kids", "at least 150 children", "capacity 200", "over 100
kids") and distances ("within 10 miles of", "8 km from": the place follows)."""

from __future__ import annotations

import re

from agent.registry.parsing.spec import ParserSpec
from agent.registry.parsing.state import Parse

_RADIUS = re.compile(
    r"\b(?:within|in\s+a|under|less\s+than)?\s*(?P<r>\d{1,3}(?:\.\d+)?)\s*[- ]?(?P<unit>miles?|mi|kilometers?|km)\b"
    r"(?:\s+(?:radius\s+)?(?:of|from|around|near))?"
)
NEAR_PENDING = "_near_pending"  # a radius was read: the place follows where it was


def take_numbers(st: Parse, spec: ParserSpec) -> None:
    for number in spec.numbers:
        for pattern, bump in number.patterns:
            def _number(m: re.Match, arg: str = number.arg, bump: int = bump) -> None:
                st.values[arg] = int(m.group("n")) + bump

            st.take(pattern, _number)


def take_radius(st: Parse) -> None:
    def _radius(m: re.Match) -> None:
        miles = float(m.group("r"))
        if m.group("unit").startswith("k"):
            miles = round(miles / 1.609344, 2)
        st.values["radius_miles"] = miles
        st.values[NEAR_PENDING] = True

    st.take(_RADIUS, _radius)
