"""Does a message's wording make it a search of this registry? Its nouns ("daycare", generic
"center"…) or a criterion word ("infant care", "drop-in"), AND a place, distance, number or
hours phrase ("in Austin", "78702", "within 10 miles", "150 kids", "open until 6"); or, with no
such phrase, a noun AND a criterion ("which offices have a nursing room?") or two criteria
("computer labs open 24 hours").

This is the pre-filter's rule for a registry; the understanding layer may still veto a message
that asks the documents about amounts or rules ("how much does a daycare in Houston get?"). The
registry's cue (cue.py) is tested first: what it does not match, this rule never claims.
"""

from __future__ import annotations

import unicodedata

from agent.accents import fold, phrases_re
from agent.registry.cue import place_phrase_re
from agent.registry.declaration import Declaration
from agent.registry.parsing.parser import QueryParser
from agent.registry.words import GenericWords


def normalize(text: str) -> str:
    return unicodedata.normalize("NFC", " ".join(text.split()))


class Claims:
    def __init__(self, decl: Declaration, words: GenericWords, parser: QueryParser) -> None:
        self.place_re = place_phrase_re(decl, words)
        self.nouns_re = phrases_re([*words.nouns, *decl.words.nouns])
        self.parser = parser

    def anchored(self, text: str) -> bool:
        """Does `text` name a place, distance, number or hours?"""
        return self.place_re is not None and bool(self.place_re.search(fold(normalize(text))))

    def __call__(self, text: str) -> bool:
        text = normalize(text)
        noun = self.nouns_re is not None and bool(self.nouns_re.search(fold(text)))
        if not self.anchored(text):
            # no place: the records' noun and one of their criteria ("which offices have a
            # nursing room?", "offices open on saturdays"), or two criteria without the noun
            # ("computer labs open 24 hours": a service and the hours) still make a search,
            # provided the registry's reading places every other word (checked by the
            # understanding layer)
            named = self.parser.criteria_named(text)
            return (noun and named >= 1) or named >= 2
        return noun or self.parser.mentions_criteria(text)
