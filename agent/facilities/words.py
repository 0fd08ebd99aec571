"""The words the `/facility` parser reads, as data (agent/data/facility_words.yaml).

Age groups and services are the registry schema's; how people say them ("babies", "bebés",
"em bé") is language, so it lives in the shipped YAML, where a language is added without
touching the parser.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources

import yaml
from pydantic import BaseModel, ConfigDict

from agent.accents import fold


class FacilityWords(BaseModel):
    """Regular expressions per schema value, in the order the parser tries them."""

    model_config = ConfigDict(frozen=True)

    features: dict[str, list[str]]
    ages: dict[str, list[str]]
    negation: list[str]
    filler: str
    place_markers: list[str]
    facility_nouns: list[str]
    knowledge_markers: list[str]
    knowledge_symbols: list[str]

    def feature_patterns(self) -> list[tuple[str, str]]:
        return [("|".join(ps), flag) for flag, ps in self.features.items()]

    def age_patterns(self) -> list[tuple[str, str]]:
        return [("|".join(ps), age) for age, ps in self.ages.items()]

    def negation_re(self) -> str:
        return r"(?:(?P<neg>" + "|".join(self.negation) + r")[\s-]+)?"

    def place_marker_re(self) -> str:
        """'<marker> <Capitalised Name>', the markers in any case (match it on folded text)."""
        markers = "|".join(fold(m) for m in self.place_markers)
        return r"\b(?i:" + markers + r") [A-Z][a-z]+(?: [A-Z][a-z]+)*\b"

    def knowledge_marker_re(self) -> re.Pattern:
        """A knowledge marker as whole words, or a symbol anywhere, on lower-cased accent-folded text."""
        words = r"(?<!\w)(?:" + "|".join(fold(m) for m in self.knowledge_markers) + r")(?!\w)"
        return re.compile("|".join([words, *(re.escape(s) for s in self.knowledge_symbols)]))

    def filler_words(self) -> frozenset[str]:
        return frozenset(self.filler.split())


@lru_cache(maxsize=1)
def shipped_words() -> FacilityWords:
    text = resources.files("agent.data").joinpath("facility_words.yaml").read_text(encoding="utf-8")
    words = FacilityWords(**yaml.safe_load(text))
    for pattern, _ in words.feature_patterns() + words.age_patterns():
        re.compile(pattern)  # a broken pattern fails at import, not mid-query
    return words
