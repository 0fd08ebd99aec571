"""Accent folding: "guarderías" and "guarderias", "nhà trẻ" and "nha tre" read the same.

Staff type with and without accents and Vietnamese tone marks (phones, US keyboards); word
lists matched against a message (a registry's words, knowledge markers) and BM25 terms compare
folded forms, so a list needs each word once.
"""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Strip combining marks ("días" -> "dias", "trẻ" -> "tre"); "đ" becomes "d"."""
    decomposed = unicodedata.normalize("NFKD", text.replace("đ", "d").replace("Đ", "D"))
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))
