"""Place names as filter keys: lower case, single spaces, no trailing level word ("county").

`Keys` is built from a declaration, so "Travis County" and "travis" are one key wherever the
registry has a level with that suffix, and a zip code is the gazetteer's code ("78702-2641"
-> "78702").
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from agent.registry.template import title_case

__all__ = ["Keys", "title_case"]

CODE_RE = r"\d{5}"  # a US zip code: the code level of the shipped gazetteer


@dataclass(frozen=True)
class Keys:
    suffixes: tuple[str, ...] = ()  # lower-case level words stripped from a name's end
    _strip: re.Pattern | None = field(default=None, compare=False)

    @classmethod
    def for_suffixes(cls, suffixes: list[str]) -> "Keys":
        words = tuple(s.lower() for s in suffixes if s)
        strip = re.compile(r"\s+(?:" + "|".join(re.escape(w) for w in words) + r")$") if words else None
        return cls(words, strip)

    def norm(self, text: str) -> str:
        text = re.sub(r"[^\w\s'-]", " ", text.lower())
        text = re.sub(r"\s+", " ", text).strip()
        return self._strip.sub("", text) if self._strip is not None else text
