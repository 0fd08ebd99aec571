"""The words of any registry (agent/data/registry_words.yaml): how people write a search.

A registry's own words (nouns, the words for its tags and flags, units, filler) are in its
declaration; these are the language's: place markers, negation, generic record nouns, filler,
the words around a place phrase. Loaded by each `Registry` (no module-level cache). How a
question asks about rules or for records is agent/data/asking.yaml (agent/asking.py).
"""

from __future__ import annotations

import re
from importlib import resources

from pydantic import BaseModel, ConfigDict

from agent.accents import fold
from agent.yamlio import safe_load

WORDS_FILE = "registry_words.yaml"


class GenericWords(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    place_markers: list[str]
    nouns: list[str]
    negation: list[str]
    filler: str
    count_nouns: list[str]
    in_markers: list[str]
    near_markers: list[str]
    stop_after_place: list[str]
    place_qualifiers: list[str]
    day_names: dict[str, list[str]] = {}  # English day word -> other languages' (regex)
    day_span_words: list[str] = []  # "to" between two days, in other languages (regex)
    day_closed_words: list[str] = []  # "closed" before a day: not a day it is open (regex)
    hours_phrases: dict[str, list[str]] = {}  # "open until" / "open at" -> other languages' (regex)
    time_of_day: dict[str, list[str]] = {}  # "am" / "pm" -> what follows an hour in other languages (regex)
    hour_words: list[str] = []  # a word after an hour that only says "o'clock" (regex)
    minute_words: dict[str, list[str]] = {}  # "30" -> minutes said in words after an hour (regex)

    def day_translations(self) -> list[tuple[re.Pattern, str]]:
        """(pattern, English word) for every other-language day name, with and without accents."""
        return translations(self.day_names)

    def hours_translations(self) -> list[tuple[re.Pattern, str]]:
        """(pattern, English words) for other languages' hours phrases, the part of the day after
        an hour ("7 de la tarde" -> "7 pm") and "o'clock" words ("7 giờ" -> "7")."""
        time = r"(\d{1,2}(?::\d{2})?)\s*"
        hour_word = alternatives(self.hour_words)
        after = rf"(?:(?:{hour_word})\s+)?" if hour_word else ""
        out = translations(self.hours_phrases)
        # minutes first, so the part of the day still follows a time ("7 y media de la tarde",
        # "7 giờ rưỡi tối", "7 giờ 30 tối" -> "7:30 pm")
        for minutes, phrases in self.minute_words.items():
            out.append((re.compile(r"(?<![\d:])(\d{1,2})\s*" + after + r"(?:" + alternatives(phrases) + r")(?![\w-])"),
                        rf"\1:{minutes}"))
        if hour_word:
            out.append((re.compile(r"(?<![\d:])(\d{1,2})\s*(?:" + hour_word + r")\s*(\d{2})(?!\s*(?:" + hour_word
                                   + r"|\d))"), r"\1:\2"))
        for half, phrases in self.time_of_day.items():
            out.append((re.compile(time + after + r"(?:" + alternatives(phrases) + r")(?![\w-])"), rf"\1 {half}"))
        if hour_word:
            out.append((re.compile(time + r"(?:" + hour_word + r")(?![\w-])"), r"\1"))
        return out

    def place_marker_re(self) -> str:
        """'<marker> <Capitalised Name>', the markers in any case (match it on folded text)."""
        markers = "|".join(fold(m) for m in self.place_markers)
        return r"\b(?i:" + markers + r") [A-Z][a-z]+(?: [A-Z][a-z]+)*\b"

    def negation_re(self) -> str:
        return r"(?:(?P<neg>" + "|".join(self.negation) + r")[\s-]+)?"

    def filler_words(self) -> frozenset[str]:
        return frozenset(self.filler.split())


def phrase_alts(phrases: list[str]) -> str:
    """Plain phrases as a regex alternation; a space matches any run of spaces."""
    return "|".join(re.escape(p.strip()).replace(r"\ ", r"\s+") for p in phrases if p.strip())


def regex_alts(patterns: list[str]) -> str:
    """Word patterns as one alternation; a literal space matches any run of spaces."""
    return "|".join(p.replace(" ", r"\s+") for p in patterns)


def alternatives(phrases: list[str]) -> str:
    """`phrases` (regex) as one alternation, each also as typed without accents, longest first."""
    return "|".join(sorted({p for phrase in phrases for p in (phrase, fold(phrase))}, key=len, reverse=True))


def translations(table: dict[str, list[str]]) -> list[tuple[re.Pattern, str]]:
    """(pattern, English) for each entry of `table`: its phrases (regex) as whole words, typed
    with or without accents."""
    return [(re.compile(r"(?<![\w-])(?:" + alternatives(phrases) + r")(?![\w-])"), english)
            for english, phrases in table.items()]


def load_generic_words() -> GenericWords:
    text = resources.files("agent.data").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    return GenericWords(**safe_load(text))
