"""Quoted names, how many results ("top 5", "all"), and coordinates ("30.27,-97.74")."""

from __future__ import annotations

import re

from agent.registry.parsing.spec import ParserSpec
from agent.registry.parsing.state import Parse

_QUOTED = re.compile(r'"([^"]+)"')
_LATLON = re.compile(r"(-?\d{1,2}\.\d+)\s*,\s*(-?\d{1,3}\.\d+)")


def take_quoted(st: Parse) -> list[str]:
    """Quoted text is a name, verbatim."""
    quoted: list[str] = []
    st.take(_QUOTED, lambda m: quoted.append(m.group(1).strip()))
    return quoted


def take_limit(st: Parse, spec: ParserSpec) -> None:
    def _limit(m: re.Match) -> None:
        st.values["limit"] = int(m.group("n")) if m.group("n") else 0

    for pattern in spec.limits:
        st.take(pattern, _limit)


def take_latlon(st: Parse) -> None:
    def _latlon(m: re.Match) -> None:
        st.values["near"] = f"{m.group(1)},{m.group(2)}"

    st.take(_LATLON, _latlon)
