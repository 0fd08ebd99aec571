"""The place names a parse can recognise: the registry's (and their nicknames), then the
gazetteer's; built once per load of the registry's places, not per request."""

from __future__ import annotations

import re

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from agent.registry.gazetteer import Gazetteer
from agent.registry.parsing.state import word_re
from agent.registry.places import KnownPlaces, PlaceLevels

FUZZY_CUTOFF = 0.8  # Damerau-Levenshtein similarity: one typo (swap, drop, extra) per five letters


class PlaceIndex:
    def __init__(self, known: KnownPlaces, levels: PlaceLevels, gazetteer: Gazetteer | None,
                 aliases: dict[str, str], filler: frozenset[str]) -> None:
        self.known = known
        self.levels = levels
        self.names = levels.names
        self.registry = {n: set(known.get(n)) for n in self.names}
        self._pools = {n: list(known.get(n)) for n in self.names}  # fuzzy choices, in registry order
        self._gazetteer = gazetteer
        self._state: dict[str, set[str]] | None = None
        norm = levels.keys.norm
        self.aliases = {norm(a): norm(t) for a, t in aliases.items() if norm(a) and norm(t)}
        self.bare = [(n, self._bare_patterns(n, filler)) for n in self.names]

    @property
    def state(self) -> dict[str, set[str]]:
        """The gazetteer's names per level (built on the first parse that needs them)."""
        if self._state is None:
            self._state = {}
            for n in self.names:
                level = self.levels.fields[n].level
                self._state[n] = set(self._gazetteer.level(level)) if self._gazetteer and level else set()
        return self._state

    def _bare_patterns(self, name: str, filler: frozenset[str]) -> list[tuple[re.Pattern, str]]:
        """Registry names of a level and their nicknames, longest first (a name that is a filler
        word, like a city called "Center", only counts after "in")."""
        nicknames = {a: t for a, t in self.aliases.items() if t in self.registry[name]}
        pool = [*self._pools[name], *(a for a in nicknames if a not in self.registry[name])]
        out = []
        for key in sorted(pool, key=len, reverse=True):
            if key in filler:
                continue
            out.append((re.compile(word_re(re.escape(key).replace(r"\ ", r"\s+"))), nicknames.get(key, key)))
        return out

    def exact(self, key: str) -> tuple[str, str] | None:
        """(level, key) for an exact name or nickname, the registry's first."""
        key = self.aliases.get(key, key)
        for n in self.names:
            if key in self.registry[n]:
                return n, key
        for n in self.names:
            if key in self.state[n]:
                return n, key
        return None

    def fuzzy(self, key: str) -> tuple[str, str] | None:
        if len(key) < 4:
            return None
        best: tuple[float, str, str] | None = None
        for n in self.names:
            hit = process.extractOne(key, self._pools[n], scorer=DamerauLevenshtein.normalized_similarity,
                                     score_cutoff=FUZZY_CUTOFF)
            if hit and (best is None or hit[1] > best[0]):
                best = (hit[1], n, hit[0])
        return (best[1], best[2]) if best else None

    def display(self, name: str, key: str) -> str:
        entry = self.known.get(name).get(key)
        return entry.name if entry is not None else self.levels.display(name, key)
