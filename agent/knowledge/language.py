"""A tiny language guesser for the KB's languages (English, Spanish, Vietnamese).

Diacritics that only Vietnamese uses plus stopword counts are enough to tell these apart on a
document or a question; no model to download. Anything else reports as "und" only when no
signal at all is found, never a wrong third language. The words and letters are data
(agent/data/languages.yaml).

`detect_language` always names a language (the index and the off-topic check need one);
`message_language` says which language to answer a message in, and None when the message is
too short or mixed to tell, so a turn can take its thread's language instead.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from importlib import resources

from agent.accents import fold
from agent.yamlio import safe_load

_DATA = safe_load(resources.files("agent.data").joinpath("languages.yaml").read_text("utf-8"))

# Letters with marks that Vietnamese uses and Spanish does not (base vowels with horn/breve/
# circumflex, d-stroke, and tone marks under/hook above).
_VI_CHARS = frozenset(_DATA["vi_letters"])
_ES_CHARS = frozenset(_DATA["es_letters"])
_VI_MESSAGE_CHARS = _VI_CHARS | frozenset(_DATA["vi_message_letters"])
_VI_PLAIN = frozenset(_DATA["vi_plain_words"])
UNSTEMMED = frozenset(_DATA.get("unstemmed") or ())  # languages indexed as written

_WORD = re.compile(r"[^\W\d_]+")


def _syllable_pattern(parts: dict[str, list[str]]) -> re.Pattern[str]:
    initials, vowels, finals = ("|".join(map(re.escape, parts[key])) for key in ("initials", "vowels", "finals"))
    return re.compile(f"(?:{initials})?(?:{vowels})(?:{finals})?")


_VI_SYLLABLE = _syllable_pattern(_DATA["vi_unmarked_syllable"])

_STOP: dict[str, set[str]] = {lang: set(words) for lang, words in _DATA["stopwords"].items()}

LANGUAGES = ("en", "es", "vi")


def _scores(text: str, message: bool = False) -> dict[str, int] | None:
    """Points per language (stopwords, and the letters only one of them marks); None: no words.
    `message`: a message to answer, where Vietnamese typed with or without its marks weighs more."""
    sample = unicodedata.normalize("NFC", text[:20000].lower())
    words = _WORD.findall(sample)
    if not words:
        return None
    scores = {lang: sum(1 for w in words if w in stop) for lang, stop in _STOP.items()}
    if message:
        scores["vi"] += 2 * sum(1 for ch in sample if ch in _VI_MESSAGE_CHARS) + sum(1 for w in words if w in _VI_PLAIN)
    else:
        scores["vi"] += sum(1 for ch in sample if ch in _VI_CHARS)
    scores["es"] += 2 * sum(1 for ch in sample if ch in _ES_CHARS)
    return scores


# Vietnamese typed without its marks: nearly every word (names aside) a syllable of its
# spelling: at least UNMARKED_FIT of them with one of its common words, or UNMARKED_ALL_FIT in a
# message of UNMARKED_ALL_WORDS words or more. On the shipped examples to decline and the kept
# organisations' eval questions: 138 of 148 Vietnamese requests typed without marks, none of 4,791
# English or Spanish texts. A message mixing in many English words ("dia chi portal vpn la gi")
# stays English: precision first.
UNMARKED_FIT = 0.75
UNMARKED_ALL_FIT = 0.9
UNMARKED_ALL_WORDS = 3
UNMARKED_VI = "vi-unmarked"
_VI_COMMON_UNMARKED = frozenset(fold(w) for w in _STOP["vi"]) | _VI_PLAIN


def typed_without_marks(text: str) -> bool:
    """Vietnamese typed without its marks ("giay phep sua nha can nhung gi"): the index folds
    marks away, but the embedder reads such a message as a language of its own."""
    sample = unicodedata.normalize("NFC", text[:2000])
    if fold(sample) != sample or any(ch in _ES_CHARS for ch in sample):  # marks, or Spanish's own signs
        return False
    # a capitalised word after the first is a name ("Night Owl", "Houston"), in any language
    words = [w.lower() for i, w in enumerate(_WORD.findall(sample))
             if (i == 0 or not w[0].isupper()) and (len(w) > 1 or w.lower() in "aeiouy")]
    if len(words) < 2:
        return False
    fit = sum(1 for w in words if _VI_SYLLABLE.fullmatch(w)) / len(words)
    common = any(w in _VI_COMMON_UNMARKED for w in words)
    return (fit >= UNMARKED_FIT and common) or (fit >= UNMARKED_ALL_FIT and len(words) >= UNMARKED_ALL_WORDS)


def writing(text: str) -> str:
    """The language of `text` as the embedder sees it: `detect_language`, except that
    Vietnamese typed without its marks is UNMARKED_VI, a language of its own (its vectors sit
    apart from those of Vietnamese written in full)."""
    return UNMARKED_VI if typed_without_marks(text) else detect_language(text)


def query_language(text: str) -> str:
    """The language a question is written in: `detect_language`, with Vietnamese typed without
    its marks read as Vietnamese (the guess, counting marked letters, would call it English)."""
    return "vi" if typed_without_marks(text) else detect_language(text)


def detect_language(text: str, default: str = "en") -> str:
    """Best guess among en/es/vi; `default` when the text carries no signal (e.g. "TX3C?")."""
    scores = _scores(text)
    if not scores:
        return default
    best = max(scores, key=lambda k: scores[k])
    if scores[best] == 0:
        return default
    # A Vietnamese-titled document whose body is mostly English is English for search purposes.
    return best


def message_language(text: str) -> str | None:
    """The language `text` is clearly written in: the one with the most points, ahead of every
    other; None when none scores or two tie ("DS-210?", "ok", "No, the other one"). Vietnamese
    typed without its marks is Vietnamese even without one of its common words ("phi chat cay")."""
    if typed_without_marks(text):
        return "vi"
    scores = _scores(text, message=True)
    if not scores:
        return None
    ranked = sorted(scores.values(), reverse=True)
    if ranked[0] == 0 or (len(ranked) > 1 and ranked[0] == ranked[1]):
        return None
    return max(scores, key=lambda k: scores[k])


def turn_language(text: str, earlier: Iterable[str] = (), default: str = "en") -> str:
    """The language to answer `text` in: its own when clear, else that of the asker's latest
    earlier message in the thread that is clear (`earlier`, oldest first), else `default`."""
    if (lang := message_language(text)) is not None:
        return lang
    for message in reversed(list(earlier)):
        if (lang := message_language(message)) is not None:
            return lang
    return default
