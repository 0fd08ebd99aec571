"""Places in a request: "near X" / after a distance, "X County", zip codes, "in X", bare names
of the registry's places (and nicknames), typos among the words left over.

Places match the registry's own names (any case, fuzzy for typos), their nicknames and the
gazetteer's; a zip code or coordinates win over words the parser cannot place. A place that
matches nothing is passed on as written, so the search answers "I don't know where X is —
did you mean …?".
"""

from __future__ import annotations

import re

from agent.registry.keys import title_case
from agent.registry.parsing.index import PlaceIndex
from agent.registry.parsing.numbers import NEAR_PENDING
from agent.registry.parsing.spec import ParserSpec
from agent.registry.parsing.state import SEP, Parse, span_of_words

_CODE_AHEAD = re.compile(r"\s*(\d{5})(?:-\d{4})?\b")
_CODE = re.compile(r"(?<![\d.-])(\d{5})(?:-\d{4})?(?![\d.])")
_PHRASE = re.compile(r"\s*([^|,;?!]*)")
_WORD = re.compile(r"[a-z0-9][a-z0-9.'-]*")


class PlaceReader:
    """The place recognisers of one parse."""

    def __init__(self, st: Parse, spec: ParserSpec, index: PlaceIndex) -> None:
        self.st, self.spec, self.index = st, spec, index
        self.norm = index.levels.keys.norm

    def words(self, phrase: str) -> list[str]:
        """Words of a place phrase, up to the first word that starts another clause."""
        words: list[str] = []
        for word in _WORD.findall(phrase):
            if word in self.spec.stop_after_place:
                break
            words.append(word)
        return words

    def match(self, words: list[str]) -> tuple[str, str, int, bool] | None:
        """Longest leading run of `words` naming a place: (level, key, words used, fuzzy?)."""
        for n in range(min(len(words), 4), 0, -1):
            hit = self.index.exact(self.norm(" ".join(words[:n])))
            if hit:
                return hit[0], hit[1], n, False
        for n in range(min(len(words), 4), 0, -1):
            hit = self.index.fuzzy(self.norm(" ".join(words[:n])))
            if hit:
                return hit[0], hit[1], n, True
        return None

    def known(self, rest: str, words: list[str]) -> tuple[str, str, int] | None:
        """(level, display name, characters of `rest` used) when `words` start with a known
        place; a fuzzy read is noted so the reply can say how the text was understood."""
        hit = self.match(words)
        if not hit:
            return None
        level, key, n, fuzzy = hit
        name = self.index.display(level, key)
        if fuzzy:
            self.st.read_as(" ".join(words[:n]), name)
        return level, name, span_of_words(rest, n)

    # --- near X ------------------------------------------------------------------------------
    def near_target(self, rest: str) -> tuple[str | None, int]:
        """(place text, characters used) for the phrase starting at `rest`."""
        m = _CODE_AHEAD.match(rest)
        if m:
            return m.group(1), m.end()
        m = _PHRASE.match(rest)
        phrase = m.group(1) if m else ""
        z = _CODE.search(phrase)
        if z and m:
            return z.group(1), m.start(1) + z.end()  # a zip code is more precise than the words before it
        words = self.words(phrase)
        if not words:
            return None, 0
        place = self.known(rest, words)
        if place:
            return place[1], place[2]
        if not [w for w in words if w not in self.spec.filler]:
            return None, 0
        return " ".join(words), span_of_words(rest, len(words))

    def take_near(self) -> None:
        st, v = self.st, self.st.values
        if v.pop(NEAR_PENDING, False):
            # the distance phrase left a SEP where it was; the place follows it
            idx = st.text.find(SEP)
            while idx != -1 and "near" not in v:
                place, used = self.near_target(st.text[idx + len(SEP):])
                if place:
                    v["near"] = place
                    st.text = st.text[:idx] + SEP + st.text[idx + len(SEP) + used:]
                    break
                idx = st.text.find(SEP, idx + 1)
        while True:
            m = self.spec.near_marker.search(st.text)
            if not m:
                return
            place, used = self.near_target(st.text[m.end():])
            if place is None:
                st.text = st.text[: m.start()] + SEP + st.text[m.end():]
                continue
            v.setdefault("near", place)
            st.text = st.text[: m.start()] + SEP + st.text[m.end() + used:]

    # --- "X County" ---------------------------------------------------------------------------
    def take_suffixed(self) -> None:
        for level, word, pattern in self.spec.suffixed:
            self.st.take(pattern, lambda m, level=level, word=word: self._suffixed(m, level, word))

    def _suffixed(self, m: re.Match, level: str, word: str) -> str | bool:
        v, filler, index = self.st.values, self.spec.filler, self.index
        words = re.findall(r"[a-z][a-z.'-]*", m.group("before"))

        def keep(n: int) -> str:  # words before the place name stay in the text
            return " ".join(words[: len(words) - n]) + SEP

        for n in range(min(len(words), 3), 0, -1):
            key = self.norm(" ".join(words[-n:]))
            if key in index.registry[level] or key in index.state[level]:
                v.setdefault(level, index.display(level, key))
                return keep(n)
        for n in range(min(len(words), 3), 0, -1):
            if any(w in filler for w in words[-n:]):
                continue
            key = self.norm(" ".join(words[-n:]))
            hit = index.fuzzy(key)
            if hit and hit[0] == level:
                name = index.display(level, hit[1])
                v.setdefault(level, name)
                self.st.read_as(f"{key} {word}", name)
                return keep(n)
        # an unknown name: pass it on as written so the search can suggest
        n = 0
        while n < min(len(words), 2) and words[-(n + 1)] not in filler:
            n += 1
        if n:
            v.setdefault(level, " ".join(words[-n:]) + f" {word}")
            return keep(n)
        return False

    # --- zip codes, "in X", bare names, typos -----------------------------------------------
    def take_codes(self) -> None:
        for level in self.index.levels.codes:
            self.st.take(_CODE, lambda m, level=level: self.st.values.setdefault(level, m.group(1)) and None)

    def take_in(self) -> None:
        st, v, levels = self.st, self.st.values, self.index.levels
        if not levels.names:
            return
        text, out, pos = st.text, [], 0
        for m in self.spec.in_marker.finditer(text):
            if m.start() < pos:
                continue
            rest = text[m.end():]
            words = self.words(re.match(r"[^|,;?!]*", rest).group(0))  # type: ignore[union-attr]
            if not words:
                continue
            place = self.known(rest, words)
            if place:
                level, name, used = place
                v.setdefault(level, name)
            else:
                content = [w for w in words if w not in self.spec.filler]
                if not content or any(ch.isdigit() for w in content for ch in w):
                    continue
                if "near" in v or any(c in v for c in levels.codes):
                    continue  # a zip code or coordinates say where: unknown words do not
                # an unknown place: hand it on as written, the search answers with suggestions
                v.setdefault(levels.names[0], title_case(" ".join(words)))
                used = span_of_words(rest, len(words))
            out.append(text[pos : m.start()])
            out.append(SEP)
            pos = m.end() + used
        out.append(text[pos:])
        st.text = "".join(out)

    def take_bare(self) -> None:
        """Registry names anywhere, longest first; a later level only when no earlier one (or
        `near`) is known ("Dallas" in "Dallas County" was taken with its suffix already)."""
        v = self.st.values
        for i, (level, patterns) in enumerate(self.index.bare):
            earlier = self.index.names[:i]
            if level in v or (i > 0 and ("near" in v or any(e in v for e in earlier))):
                continue
            for pattern, target in patterns:
                if pattern.search(self.st.text):
                    v[level] = self.index.display(level, target)
                    self.st.text = pattern.sub(SEP, self.st.text, count=1)
                    break

    def take_typos(self, leftover: list[str]) -> None:
        """A typo'd place among the leftover words, when no place was found ("richlnd hils")."""
        v, levels = self.st.values, self.index.levels
        if not leftover or {*levels.names, *levels.codes, "near"} & set(v):
            return
        for n in (3, 2, 1):
            for i in range(0, len(leftover) - n + 1):
                key = " ".join(leftover[i : i + n])
                hit = self.index.fuzzy(key) if len(key) >= 5 else None
                if hit:
                    name = self.index.display(hit[0], hit[1])
                    v[hit[0]] = name
                    self.st.read_as(key, name)
                    del leftover[i : i + n]
                    return
