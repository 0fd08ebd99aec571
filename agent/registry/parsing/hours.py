"""Opening hours: "open at/by 6:30" (am unless "pm"), "open until 6:30" (pm unless "am"); a
declaration adds its own ways to say them ("pick up by 6", "drop off at 7"), and the shared word
lists other languages' ("abierto hasta las 7 de la tarde", "mở cửa từ 6 giờ sáng")."""

from __future__ import annotations

import re

from agent.registry.fields import HoursField
from agent.registry.parsing.state import Parse

_TIME = r"(?P<h>\d{1,2})(?::(?P<m>\d{2}))?\s*(?P<half>a\.?m\.?|p\.?m\.?)?(?![\w:])"


def to_hhmm(hour: int, minute: int, half: str | None) -> str | None:
    if half:
        if not 1 <= hour <= 12:
            return None
        hour = hour % 12 + (12 if half.startswith("p") else 0)
    if hour > 23 or minute > 59:
        return None
    return f"{hour:02d}:{minute:02d}"


class HoursPatterns:
    def __init__(self, hours: HoursField, translations: list[tuple[re.Pattern, str]] | None = None) -> None:
        # other languages' phrases read as the English ones (agent/data/registry_words.yaml)
        self.translations = translations or []
        until = [r"(?:open(?:s|ing)?|stay(?:s|ing)?\s+open)\s+(?:until|till|til|to|past|after)",
                 r"clos(?:es|ing)\s+(?:at|after)", *hours.words.open_until]
        opens = [r"open(?:s|ing)?", *hours.words.open_at]
        self.until = re.compile(r"\b(?:" + "|".join(until) + r")\s+" + _TIME)
        self.open_at = re.compile(r"\b(?:" + "|".join(opens) + r")\s+(?:at|by|before|from|no\s+later\s+than)?\s*"
                                  + _TIME)


def take_hours(st: Parse, patterns: HoursPatterns) -> None:
    for pattern, english in patterns.translations:
        st.text = pattern.sub(english, st.text)

    def _open(m: re.Match) -> bool | None:
        hhmm = to_hhmm(int(m.group("h")), int(m.group("m") or 0), m.group("half"))
        if hhmm is None:
            return False
        st.values["open_at"] = hhmm
        return None

    def _until(m: re.Match) -> bool | None:
        hour, half = int(m.group("h")), m.group("half")
        if not half and 1 <= hour <= 11:
            half = "pm"  # "open until 6:30" means the evening
        hhmm = to_hhmm(hour, int(m.group("m") or 0), half)
        if hhmm is None:
            return False
        st.values["open_until"] = hhmm
        return None

    st.take(patterns.until, _until)
    st.take(patterns.open_at, _open)
