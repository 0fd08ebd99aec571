"""What a message must hold to be a search of a registry: its cue, tested before its claim.

The claim rule (claims.py) runs the registry's parser (agent/registry/parsing/) on the message,
and most messages are questions for the documents. A message is claimed only when it names a
place, distance, number or hours (the anchor: `place_phrase_re`, the rule's own pattern) or
one of the registry's criteria: a flag or tag word, a day, an opening time, a number with its
unit, a distance, a stated age. The cue is those phrases compiled once from the declaration and
the language's words — exact for the anchor, as generous as the parser's patterns or more for
the criteria — and tested on the message's folded text (`agent.accents.Cue`): a message it does
not match is no search of this registry, and the parser is not even imported. Sound by
construction, since every recogniser's first match is one of these phrases (the day and hours
translations included); tests/test_registry_engine.py checks it on every sample message.

The records cue is the other way a message becomes a search: it asks for the registry's records
by their noun ("which offices have…", "¿qué guarderías…?", "nhà trẻ nào…"), the language's ways
of asking (agent/data/asking.yaml) filled with the registry's nouns.
"""

from __future__ import annotations

import re

from agent.accents import Cue, fold
from agent.asking import load_asking
from agent.registry.declaration import Declaration
from agent.registry.words import GenericWords, phrase_alts, regex_alts

# what the parser's text normalisation turns into words ("w/" -> "with", "&" -> "and", curly quotes)
_NORMALISED = r"&|\bw/|[’“”]"
# a day of the week, however the parser reads it: "mon", "tues", "wednesday", "sat.", "sundays"
_DAYS = r"\b(?:mon|tues?|wed(?:nes)?|thu(?:rs?)?|fri|sat(?:ur)?|sun)(?:day)?s?\b|\bweek[\s-]?(?:end|day)s?\b|\bm\s*-\s*f\b"
_STATED_AGE = r"\d[\s-]*(?:years?|yrs?|months?|mos?)[\s-]*olds?\b"
_DISTANCE = r"\d\s*[- ]?(?:mi|km|kilomet)"
_HOURS_WORDS = ["open", "stay", "clos"]  # the generic "open until 6", "stays open till", "closes at"


def place_phrase_re(decl: Declaration, words: GenericWords) -> re.Pattern | None:
    """A place, distance, number or hours phrase: what anchors a search of the registry (matched
    on the message's folded text, case kept: "in Austin", not "in the")."""
    pieces: list[str] = []
    if any(p.level == "zip" for p in decl.places.values()):
        pieces.append(r"\b\d{5}\b")
    if decl.geo:
        pieces += [r"\bwithin \d+(\.\d+)? ?(mi|miles?|km)\b", r"\bnear (me|\w+)"]
    for place in decl.places.values():
        if place.suffix and place.level != "zip":
            names = phrase_alts([place.suffix.lower(), *(a.lower() for a in place.abbreviations)])
            pieces.append(r"\b[A-Z][a-z]+ (" + names + r")\b")
    units = [u for n in decl.numbers.values() for u in (*n.words.units, *n.words.names)]
    if units:
        pieces.append(r"\b\d+\+? (" + phrase_alts(units) + r")\b")
    if decl.hours:
        pieces.append(r"\bopen (by|until|till|at) \d")
    if decl.places or decl.geo:
        pieces.append(words.place_marker_re())
    return re.compile("(" + "|".join(pieces) + ")") if pieces else None


def criteria_phrases(decl: Declaration, words: GenericWords) -> list[str]:
    """Patterns of which at least one matches whatever the parser reads as a criterion."""
    out = [_NORMALISED]
    out += [regex_alts(f.words) for f in decl.flags.values() if f.ask and f.words]
    out += [regex_alts(v.words) for t in decl.tags.values() for v in t.values.values() if v.words]
    if any(v.age_under_months is not None for t in decl.tags.values() for v in t.values.values()):
        out.append(_STATED_AGE)
    if decl.days is not None:
        out += [_DAYS, *(p.pattern for p, _ in words.day_translations())]
    if decl.hours:
        said = decl.hours[1].words
        out.append(r"\b(?:" + "|".join([*_HOURS_WORDS, *said.open_until, *said.open_at]) + r")\D{0,40}\d")
        out += [p.pattern for p, _ in words.hours_translations()]
    for number in decl.numbers.values():
        w = number.words
        out += [r"\d\s*\+", r"\d\s+or\s+(?:more|fewer|less)\b"]
        if unit_or_name := "|".join(x for x in (phrase_alts(w.units), phrase_alts(w.names)) if x):
            out.append(r"\d\s*(?:" + unit_or_name + r")\b")
        if lead := "|".join(x for x in (phrase_alts(w.names), phrase_alts(w.before)) if x):
            out.append(r"\b(?:" + lead + r")\s*(?:of\s+)?(?:at\s+least\s+|>=?\s*)?\d")
    if decl.geo:
        out.append(_DISTANCE)
    return [p for p in out if p]


def registry_cue(decl: Declaration, words: GenericWords) -> Cue:
    loose = "|".join(f"(?:{fold(p)})" for p in criteria_phrases(decl, words))
    return Cue(exact=place_phrase_re(decl, words), loose=re.compile(loose, re.IGNORECASE) if loose else None)


def record_nouns(decl: Declaration, words: GenericWords) -> list[str]:
    """The words that name this registry's records: the language's generic ones, the
    declaration's own, its record's singular and plural."""
    return [*words.nouns, *decl.words.nouns, decl.record.singular, decl.record.plural]


def records_cue(decl: Declaration, words: GenericWords) -> Cue:
    """A request for this registry's records by their noun (matched on the folded message, any case)."""
    pattern = load_asking().records_re(record_nouns(decl, words))
    return Cue(loose=re.compile(pattern.pattern, re.IGNORECASE) if pattern is not None else None)
