"""Accent folding: "guarderías" and "guarderias", "nhà trẻ" and "nha tre" read the same.

Staff type with and without accents and Vietnamese tone marks (phones, US keyboards); word
lists matched against a message (a registry's words, knowledge markers) and BM25 terms compare
folded forms, so a list needs each word once.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass


def fold(text: str) -> str:
    """Strip combining marks ("días" -> "dias", "trẻ" -> "tre"); "đ" becomes "d"."""
    decomposed = unicodedata.normalize("NFKD", text.replace("đ", "d").replace("Đ", "D"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def phrases_re(phrases: list[str]) -> re.Pattern | None:
    """Whole-word, case-insensitive alternation of the accent-folded phrases (search folded
    text with it); a space in a phrase also matches '-' or nothing."""
    parts = []
    for phrase in sorted({fold(p.strip()) for p in phrases if p and p.strip()}, key=len, reverse=True):
        words = [re.escape(w) for w in phrase.split()]
        parts.append(r"[\s-]?".join(words))
    if not parts:
        return None
    return re.compile(r"(?<![\w])(?:" + "|".join(parts) + r")(?![\w])", re.IGNORECASE)


@dataclass(frozen=True)
class Cue:
    """A quick test whether a message may hold one of a reader's phrases, run before the reader
    itself (a registry's cue before its parser: agent/registry/cue.py). Both patterns search the
    message's folded text, whitespace collapsed: `exact` as compiled (case matters, as in place
    names), `loose` compiled from folded phrases, case-insensitively."""

    exact: re.Pattern[str] | None = None
    loose: re.Pattern[str] | None = None

    def __call__(self, text: str) -> bool:
        folded = fold(" ".join(text.split()))
        return bool(self.exact is not None and self.exact.search(folded)
                    or self.loose is not None and self.loose.search(folded))
