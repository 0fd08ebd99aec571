"""Days of the week: "weekend care", "open saturdays", "mon-fri", "open on sat/sun".

Days come before times, so "open weekends until 7pm" keeps its time. "sat"/"sun" count as days
only after "open"/"on" or as "sat/sun", and not when a name-like word follows ("on Sun Valley Dr").
"""

from __future__ import annotations

import re

from agent.accents import fold
from agent.registry.parsing.spec import ParserSpec
from agent.registry.parsing.state import Parse, word_re
from agent.registry.values import WEEKDAYS

_DAY_FULL = r"(?P<{g}>mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|satur|sun)(?:day)s?"  # "tuesdays", "thursday"
_DAY_ABBR = r"(?P<{g}>mon|tues?|wed|thu(?:rs?)?|fri|sat|sun)\.?"
_DAY_SPAN_END = r"(?P<{g}>mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?\.?"  # "mon-fri"
_DAY_ANY = r"(?:" + _DAY_FULL.replace("(?P<{g}>", "(?:") + "|" + _DAY_ABBR.replace("(?P<{g}>", "(?:") + ")"
_OPEN_ON = r"(?:(?:(?:open(?:s|ed)?|available)\s+)?(?:on\s+|every\s+)?)"

_WEEKEND = re.compile(word_re(_OPEN_ON + r"(?:week[\s-]?ends?|sat(?:urday)?s?\s*(?:/|and|&|-)\s*sun(?:day)?s?)"))
_WEEKDAYS = re.compile(word_re(_OPEN_ON + r"(?:week[\s-]?days?|m\s*-\s*f)"))
_SPAN = re.compile(word_re(_OPEN_ON + _DAY_SPAN_END.format(g="a") + r"\s*(?:-|–|to|thru|through)\s*"
                           + _DAY_SPAN_END.format(g="b")))
_FULL = re.compile(word_re(_OPEN_ON + _DAY_FULL.format(g="d")))
_ABBR = re.compile(r"(?<![\w-])(?:open(?:s|ed)?\s+(?:on\s+)?|on\s+)(?P<list>" + _DAY_ABBR.format(g="d")
                   + r"(?:\s*(?:/|,|and|&)\s*" + _DAY_ABBR.format(g="e") + r")*)(?![\w-])")
_TIME_AFTER = re.compile(r"\s+(?:until|till|til|to|past|after|at|by|before|from)\s+\d")
_NEXT = re.compile(r"[\s|,;.!?]*([a-z0-9]*)")
_DAY_ANY_RE = re.compile(_DAY_ANY)


def _day(word: str) -> str:
    return WEEKDAYS[[d.lower() for d in WEEKDAYS].index(word[:3])]


_ENGLISH_DAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)"


def translate(text: str, spec: ParserSpec) -> str:
    """Other languages' day names as the English ones ("los domingos" -> "los sunday", "de lunes
    a viernes" -> "de monday to friday"), from the shared word lists (agent/data/registry_words.yaml)."""
    for pattern, english in spec.day_translations:
        text = pattern.sub(english, text)
    if spec.day_span and spec.day_translations:
        text = re.sub(r"(?<![\w-])(" + _ENGLISH_DAY + r")\s+(?:" + spec.day_span + r")\s+(" + _ENGLISH_DAY + r")(?![\w-])",
                      r"\1 to \2", text)
    return text


def take_days(st: Parse, spec: ParserSpec) -> None:
    days: set[str] = set()
    st.text = translate(st.text, spec)

    def _rest(m: re.Match) -> str | None:
        """Keep 'open' when a time follows, so "open weekends until 7pm" still reads the time."""
        if m.group(0).startswith("open") and _TIME_AFTER.match(m.string[m.end():]):
            return "open"
        return None

    def _shut(m: re.Match) -> bool:
        """"closed on sundays" names a day it is NOT open: no filter can say that, so the words
        are left to rank the results rather than read as "open on Sunday"."""
        return spec.day_closed is not None and bool(spec.day_closed.search(fold(m.string[: m.start()])))

    def _open_days(found: list[str], m: re.Match) -> str | bool | None:
        if _shut(m):
            return False
        days.update(found)
        return _rest(m)

    def _span(m: re.Match) -> str | bool | None:
        i, j = WEEKDAYS.index(_day(m.group("a"))), WEEKDAYS.index(_day(m.group("b")))
        return _open_days(WEEKDAYS[i : j + 1] if i <= j else WEEKDAYS[i:] + WEEKDAYS[: j + 1], m)

    def _abbr(m: re.Match) -> str | bool | None:
        # "sun"/"sat" alone is a day only when nothing name-like follows ("on Sun Valley Dr" is a street)
        nxt = _NEXT.match(m.string[m.end():]).group(1)  # type: ignore[union-attr]
        if nxt and nxt not in spec.filler and nxt not in spec.stop_after_place and not _DAY_ANY_RE.fullmatch(nxt):
            return False
        return _open_days([_day(w) for w in re.findall(r"[a-z]+", m.group("list")) if w not in ("and", "on", "open")], m)

    st.take(_WEEKEND, lambda m: _open_days(["Sat", "Sun"], m))
    st.take(_WEEKDAYS, lambda m: _open_days(WEEKDAYS[:5], m))
    st.take(_SPAN, _span)
    st.take(_FULL, lambda m: _open_days([_day(m.group("d"))], m))
    st.take(_ABBR, _abbr)
    if days:
        st.values["days"] = [d for d in WEEKDAYS if d in days]
