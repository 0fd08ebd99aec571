"""A declaration's words, compiled once per registry into the patterns the recognisers run.

Generic phrasing ("top 5", "at least N", "within N miles of") is here; what people call a
registry's values, units and places comes from its declaration and the language words file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.registry.declaration import Declaration
from agent.registry.parsing.hours import HoursPatterns
from agent.registry.parsing.state import word_re
from agent.registry.words import GenericWords, alternatives
from agent.registry.words import phrase_alts as _alts
from agent.registry.words import regex_alts as _regex_alts


@dataclass
class TagPatterns:
    name: str  # the tags field (its argument)
    order: list[str]  # its values, in declared order
    values: list[tuple[re.Pattern, str]] = field(default_factory=list)
    ages: list[tuple[str, int | None]] = field(default_factory=list)  # (value, under months): a stated age


@dataclass
class NumberPatterns:
    arg: str  # min_NAME / max_NAME
    patterns: list[tuple[re.Pattern, int]]  # (pattern with group n, added to n)


def _number_patterns(name: str, number, arg_min: bool, arg_max: bool) -> list[NumberPatterns]:
    w = number.words
    units, names, before = _alts(w.units), _alts(w.names), _alts(w.before)
    plus_tail = _alts([*w.units, *w.after_plus, *w.names])
    unit_or_name = "|".join(x for x in (units, names) if x)
    out = []
    if arg_min:
        pats: list[tuple[str, int]] = [(r"(?P<n>\d{1,5})\s*\+\s*" + (f"(?:{plus_tail})?" if plus_tail else ""), 0)]
        lead = "|".join(x for x in (names, before) if x)
        if lead:
            pats.append((r"\b(?:" + lead + r")\s*(?:of\s+)?(?:at\s+least\s+|>=?\s*)?(?P<n>\d{1,5})\b"
                         + (rf"(?:\s*(?:{units}))?" if units else ""), 0))
        if unit_or_name:
            pats.append((r"\b(?:at\s+least|min(?:imum)?)\s+(?P<n>\d{1,5})\s*(?:" + unit_or_name + r")\b", 0))
        pats.append((r"\b(?P<n>\d{1,5})\s+or\s+more\s*" + (f"(?:{units})?" if units else ""), 0))
        if units:
            pats.append((r"\b(?:over|more\s+than)\s+(?P<n>\d{1,5})\s*(?:" + units + r")\b", 1))
        out.append(NumberPatterns(f"min_{name}", [(re.compile(p), b) for p, b in pats]))
    if arg_max:
        pats = []
        if unit_or_name:
            pats.append((r"\b(?:at\s+most|max(?:imum)?|up\s+to|no\s+more\s+than)\s+(?P<n>\d{1,5})\s*(?:"
                         + unit_or_name + r")\b", 0))
        pats.append((r"\b(?P<n>\d{1,5})\s+or\s+(?:fewer|less)\s*" + (f"(?:{units})?" if units else ""), 0))
        if units:
            pats.append((r"\b(?:under|fewer\s+than|less\s+than)\s+(?P<n>\d{1,5})\s*(?:" + units + r")\b", -1))
        out.append(NumberPatterns(f"max_{name}", [(re.compile(p), b) for p, b in pats]))
    return out


class ParserSpec:
    """Everything a parse of this registry's requests reads, compiled."""

    def __init__(self, decl: Declaration, words: GenericWords) -> None:
        self.decl = decl
        nouns = {decl.record.singular.lower(), decl.record.plural.lower()}  # "offices" is never a name
        self.filler = words.filler_words() | frozenset(decl.words.filler.split()) | nouns
        self.stop_after_place = frozenset(words.stop_after_place)
        self.qualifiers = re.compile(word_re("|".join(words.place_qualifiers)))
        nouns = _alts([*words.count_nouns, decl.record.plural, *decl.words.count_nouns])
        self.limits = [re.compile(p) for p in (
            r"\b(?:top|first)\s+(?P<n>\d{1,3})\b",
            r"\b(?:give\s+me|show(?:\s+me)?|list|find(?:\s+me)?)\s+(?P<n>\d{1,3})\b"
            r"(?!\s*(?:\+|mi|km|miles?|years?|months?))",
            r"\b(?P<n>\d{1,3})\s+(?=(?:" + nouns + r")\b)",
            r"\b(?:(?:show|list|find|give\s+me)\s+)?(?:all|every|everything)(?:\s+of\s+them)?\b(?P<n>)",
        )]
        self.has_geo = decl.geo is not None
        self.has_days = decl.days is not None
        self.day_translations = words.day_translations() if self.has_days else []
        self.day_span = alternatives(words.day_span_words)  # "to" between two days, other languages
        closed = alternatives(words.day_closed_words)
        # "closed on sundays" (after translation "cerradas los sunday"): ends right before the day
        self.day_closed = re.compile(r"(?<![\w-])(?:" + closed + r")\s+(?:(?:on|los|las|el|la|vào)\s+)?$") \
            if closed else None
        self.hours = HoursPatterns(decl.hours[1], words.hours_translations()) if decl.hours else None
        self.numbers = [p for name, n in decl.numbers.items()
                        for p in _number_patterns(name, n, n.filter in ("min", "range"), n.filter in ("max", "range"))]
        negation = words.negation_re()
        self.flags = [(re.compile(word_re(negation + "(?:" + _regex_alts(f.words) + ")")), name)
                      for name, f in decl.flags.items() if f.ask and f.words]
        self.tags = [self._tags(name, t) for name, t in decl.tags.items()]
        self.near_marker = re.compile(r"\b(?:" + _regex_alts(words.near_markers) + r")\s+")
        self.in_marker = re.compile(r"\b(?:" + _regex_alts(words.in_markers) + r")\s+")
        self.suffixed = [
            (name, p.suffix.lower(), re.compile(r"(?P<before>(?:[a-z][a-z.'-]*\s+){0,2}[a-z][a-z.'-]*)\s+"
                                                 + re.escape(p.suffix.lower()) + r"\b"))
            for name, p in decl.places.items() if p.suffix and p.level != "zip"
        ]
        criteria = [_regex_alts(f.words) for f in decl.flags.values() if f.ask and f.words]
        criteria += [_regex_alts(v.words) for t in decl.tags.values() for v in t.values.values() if v.words]
        self.criteria = re.compile("|".join(word_re(p) for p in criteria), re.IGNORECASE) if criteria else None

    @staticmethod
    def _tags(name: str, tags) -> TagPatterns:
        out = TagPatterns(name, list(tags.values))
        for value, spec in tags.values.items():
            if spec.words:
                out.values.append((re.compile(word_re(_regex_alts(spec.words))), value))
        if any(spec.age_under_months is not None for spec in tags.values.values()):
            out.ages = [(value, spec.age_under_months) for value, spec in tags.values.items()]
        return out
