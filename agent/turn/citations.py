"""Inline citations: `[n]` markers that point at documents a tool really returned.

Every `<document index=..>` block the agent sees in a turn gets a turn-wide number (a
second search in the same turn continues the count instead of restarting at 1), so a
marker names exactly one retrieved passage. In the answer, markers are renumbered in
order of first appearance ([1], [2], ... — the numbers of the sources list) and a marker
that names no retrieved document is dropped: the sources list is exactly what the text
cites. The same rules apply to a streamed answer (a marker is held back until its `]`
arrives) and to a whole one, so both read the same.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.references import Reference

_DOC_INDEX = re.compile(r'(<document index=")(\d+)(")')
_MAX_MARKER_DIGITS = 3  # "[2024]" is a year, not a citation


class Citations:
    """The documents of one turn by number, and the order the answer cites them in."""

    def __init__(self) -> None:
        self.documents: dict[int, Reference] = {}
        self._display: dict[tuple[str, str], int] = {}  # (source, section) -> number shown
        self.cited: list[Reference] = []

    def number(self, text: str, documents: Sequence[Reference]) -> str:
        """Renumber the `<document index>` blocks of one tool result turn-wide and remember
        which reference each number stands for (`documents`: the result's, in index order)."""
        offset = len(self.documents)

        def renumber(match: re.Match[str]) -> str:
            local = int(match.group(2))
            number = offset + local
            if 0 < local <= len(documents):
                self.documents[number] = documents[local - 1]
            return f"{match.group(1)}{number}{match.group(3)}"

        return _DOC_INDEX.sub(renumber, text)

    def render(self, number: int) -> str | None:
        """The marker shown for document `number`, or None when no tool returned it."""
        ref = self.documents.get(number)
        if ref is None:
            return None
        key = (ref.source, ref.section)
        if key not in self._display:
            self.cited.append(ref)
            self._display[key] = len(self.cited)
        return f"[{self._display[key]}]"


class MarkerFilter:
    """Text in, text out, chunk by chunk: markers renumbered (or dropped), leading and
    trailing whitespace held back so the streamed text equals the stripped answer."""

    def __init__(self, citations: Citations) -> None:
        self.citations = citations
        self._space = ""  # whitespace not yet known to be inside the text
        self._mark = ""  # "[" + digits, waiting for "]"
        self._started = False
        self._dropped = False  # a marker was just dropped: no doubled space, no space before "."

    def feed(self, chunk: str) -> str:
        out: list[str] = []
        for char in chunk:
            if self._mark:
                if char.isdigit() and len(self._mark) <= _MAX_MARKER_DIGITS:
                    self._mark += char
                    continue
                if char == "]" and len(self._mark) > 1:
                    shown = self.citations.render(int(self._mark[1:]))
                    self._mark = ""
                    if shown is not None:
                        out.append(self._space + shown)
                        self._space = ""
                        self._started = True
                    else:
                        self._dropped = True
                    continue
                out.append(self._space + self._mark)
                self._space, self._mark = "", ""
                self._started = True
            if char == "[":
                self._mark = "["
            elif char.isspace():
                if self._started and not (self._dropped and self._space):
                    self._space += char
            else:
                if self._dropped and char in ".,;:!?)":
                    self._space = ""
                out.append(self._space + char)
                self._space = ""
                self._started = True
                self._dropped = False
        return "".join(out)

    def flush(self) -> str:
        """End of the text: an unfinished marker is plain text; trailing whitespace goes."""
        rest = self._space + self._mark if self._mark else ""
        self._space, self._mark = "", ""
        return rest

    def reset(self) -> None:
        """A new answer starts (after an interruption note): drop what was held back."""
        self._space, self._mark, self._started, self._dropped = "", "", False, False
