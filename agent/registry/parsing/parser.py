"""A registry's `/`-command text -> its search arguments, deterministically (no model call).

Each recogniser takes its words out of the text, in an order that keeps overlapping phrases
apart: flags before tags ("after-school" holds "school"), "Dallas County" before the city
"Dallas", days before times ("open weekends until 7pm" keeps its time). Words left over become
the free-text query, minus filler; the search ranks by them and never excludes by them when
other criteria are given.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel

from agent.prompts import PromptSet

from agent.registry.parsing.counts import take_latlon, take_limit, take_quoted
from agent.registry.parsing.days import take_days
from agent.registry.parsing.hours import take_hours
from agent.registry.parsing.index import PlaceIndex
from agent.registry.parsing.numbers import take_numbers, take_radius
from agent.registry.parsing.places import PlaceReader
from agent.registry.parsing.spec import ParserSpec
from agent.registry.parsing.state import Parse, normalise
from agent.registry.parsing.tags import take_flags, take_tags

_LEFTOVER = re.compile(r"[^\W_][\w.'&-]*")


@dataclass
class ParsedQuery:
    args: BaseModel
    notes: list[str] = field(default_factory=list)  # e.g. "read 'san antono' as San Antonio"
    leftover: str = ""  # words no recogniser placed (the router model may read them)


class QueryParser:
    def __init__(self, spec: ParserSpec, args_model: type[BaseModel]) -> None:
        self.spec = spec
        self.args_model = args_model

    def mentions_criteria(self, text: str) -> bool:
        """Does `text` name a flag or tag value of the registry ("infant care", "drop-in")?"""
        return bool(self.spec.criteria and self.spec.criteria.search(normalise(text)))

    def criteria_named(self, text: str) -> int:
        """How many of the registry's criteria `text` names — flags, tag fields, days, hours,
        numbers ("computer labs open on Sundays": 2) — read as `parse` reads them, places aside."""
        st = Parse(normalise(text or ""))
        self._take_criteria(st)
        return sum(1 for key, value in st.values.items() if not key.startswith("_") and value not in (None, [], ""))

    def _take_criteria(self, st: Parse) -> None:
        spec = self.spec
        if spec.has_days:
            take_days(st, spec)
        if spec.hours is not None:
            take_hours(st, spec.hours)
        take_numbers(st, spec)
        if spec.has_geo:
            take_radius(st)
        take_flags(st, spec)
        take_tags(st, spec)

    def parse(self, text: str, index: PlaceIndex, prompts: "PromptSet | None" = None) -> ParsedQuery:
        spec = self.spec
        st = Parse(normalise(text or ""), prompts=prompts)
        st.text = spec.qualifiers.sub(" ", st.text)  # "downtown Austin" is Austin
        quoted = take_quoted(st)
        take_limit(st, spec)
        if spec.has_geo:
            take_latlon(st)
        self._take_criteria(st)
        places = PlaceReader(st, spec, index)
        if spec.has_geo:
            places.take_near()
        places.take_suffixed()
        places.take_codes()
        places.take_in()
        places.take_bare()
        leftover = [w for w in _LEFTOVER.findall(st.text) if w not in spec.filler]
        if index.names:
            places.take_typos(leftover)
        parts = quoted + leftover
        if parts:
            st.values["query"] = " ".join(parts)
        args = self.args_model(**{k: v for k, v in st.values.items() if not k.startswith("_")})
        return ParsedQuery(args=args, notes=st.notes, leftover=" ".join(leftover))
