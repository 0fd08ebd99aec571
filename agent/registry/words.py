"""The words of any registry (agent/data/registry_words.yaml): how people write a search.

A registry's own words (nouns, the words for its tags and flags, units, filler) are in its
declaration; these are the language's: place markers, negation, generic record nouns, filler,
the words around a place phrase. Loaded by each `Registry` (no module-level cache); the
understanding layer reads the knowledge markers from the same file.
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
    knowledge_markers: list[str]
    knowledge_symbols: list[str]
    negation: list[str]
    filler: str
    count_nouns: list[str]
    in_markers: list[str]
    near_markers: list[str]
    stop_after_place: list[str]
    place_qualifiers: list[str]
    day_names: dict[str, list[str]] = {}  # English day word -> other languages' (regex)
    day_span_words: list[str] = []  # "to" between two days, in other languages (regex)

    def day_translations(self) -> list[tuple[re.Pattern, str]]:
        """(pattern, English word) for every other-language day name, with and without accents."""
        out = []
        for english, phrases in self.day_names.items():
            alternatives = sorted({p for phrase in phrases for p in (phrase, fold(phrase))}, key=len, reverse=True)
            out.append((re.compile(r"(?<![\w-])(?:" + "|".join(alternatives) + r")(?![\w-])"), english))
        return out

    def place_marker_re(self) -> str:
        """'<marker> <Capitalised Name>', the markers in any case (match it on folded text)."""
        markers = "|".join(fold(m) for m in self.place_markers)
        return r"\b(?i:" + markers + r") [A-Z][a-z]+(?: [A-Z][a-z]+)*\b"

    def knowledge_marker_re(self) -> re.Pattern:
        """A knowledge marker as whole words, or a symbol anywhere, on lower-cased accent-folded text."""
        words = r"(?<!\w)(?:" + "|".join(fold(m) for m in self.knowledge_markers) + r")(?!\w)"
        return re.compile("|".join([words, *(re.escape(s) for s in self.knowledge_symbols)]))

    def negation_re(self) -> str:
        return r"(?:(?P<neg>" + "|".join(self.negation) + r")[\s-]+)?"

    def filler_words(self) -> frozenset[str]:
        return frozenset(self.filler.split())


def load_generic_words() -> GenericWords:
    text = resources.files("agent.data").joinpath(WORDS_FILE).read_text(encoding="utf-8")
    return GenericWords(**safe_load(text))
