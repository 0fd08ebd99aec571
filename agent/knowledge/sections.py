"""Section expansion: search matches small passages, the reader and the model get their section.

A chunk is small so that it matches precisely, but the answer often sits in the part of its
section the chunk left out (the next rows of a table, the step after the one that matched).
`expand` gives each passage a `context`: the consecutive chunks of the same section around it,
rejoined into the section's text (the overlap the chunker carried between chunks and a table's
repeated header row dropped), growing outwards from the match until `budget` characters; when the
whole section fits with room to spare, the neighbouring sections of the document follow, each
under its heading path (a short section rarely holds all of what a question needs, as the
1,024-token chunks of a day-one build do). Whole chunks only, so a table row or a number is never
cut. A later passage whose chunk is already inside an earlier passage's context adds nothing and
is dropped, and no context repeats chunks an earlier one shows, so the top k are k different
places of the knowledge base.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel

import agent.store.models as models

if TYPE_CHECKING:
    from agent.runtime import Runtime

# search's Passage (not imported: search imports this module)
P = TypeVar("P", bound=BaseModel)

_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
OVERLAP_PARAGRAPHS = 6  # most leading paragraphs of a chunk that can be the previous one's overlap
MIN_CHUNK_CHARS = 40  # the shortest chunk assumed when sizing how far around a match to read


@dataclass(frozen=True)
class Piece:
    """One stored chunk of a document: its section's heading path and its text."""

    section: str
    text: str


def _plain(text: str) -> str:
    return " ".join(text.split())


def _without_overlap(before: str, after: str) -> str:
    """`after` less the leading paragraphs that are the tail of `before` (the chunker's overlap:
    whole units, or whole sentences of the last one re-joined by single spaces)."""
    paragraphs = after.split("\n\n")
    tail = _plain(before[-4 * len(after):])
    for n in range(min(len(paragraphs) - 1, OVERLAP_PARAGRAPHS), 0, -1):
        head = _plain("\n\n".join(paragraphs[:n]))
        if head and tail.endswith(head):
            return "\n\n".join(paragraphs[n:])
    return after


def continued_tables(text: str) -> str:
    """`text` with each table that the chunker cut and restarted under a repeated header row
    (a blank line, the same header, its rule) read as the one table it is."""
    lines = text.split("\n")
    out: list[str] = []
    header: tuple[str, str] | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        if (header is not None and not line.strip() and out and _TABLE_ROW.match(out[-1])
                and tuple(lines[i + 1 : i + 3]) == header):
            i += 3  # the blank line and the repeated header: the rows go on under the first one
            continue
        if _TABLE_ROW.match(line) and i + 1 < len(lines) and _TABLE_RULE.match(lines[i + 1]) and not (
                out and _TABLE_ROW.match(out[-1])):
            header = (line, lines[i + 1])
        out.append(line)
        i += 1
    return "\n".join(out)


def join(before: str, after: str) -> str:
    """Two consecutive chunks of one section as the section reads: overlap dropped, and a table
    that goes on into `after` continued without its repeated header row."""
    after = _without_overlap(before, after)
    return continued_tables(f"{before}\n\n{after}")


def _heading(piece: Piece) -> str:
    return f"## {piece.section}\n\n" if piece.section else ""


def _grow(pieces: dict[int, Piece], index: int, budget: int, text: str, lo: int, hi: int,
          same_section: bool) -> tuple[str, int, int]:
    """Chunks added around `text` (chunks lo..hi), next one first, while the whole fits; a chunk
    of another section comes with its heading path."""
    centre = pieces[index]
    grew = True
    while grew:
        grew = False
        following = pieces.get(hi + 1)
        if following is not None and (following.section == centre.section or not same_section):
            before = pieces[hi]
            longer = (join(text, following.text) if following.section == before.section
                      else f"{text}\n\n{_heading(following)}{following.text}")
            if len(longer) <= budget:
                text, hi, grew = longer, hi + 1, True
        preceding = pieces.get(lo - 1)
        if preceding is not None and (preceding.section == centre.section or not same_section):
            first = pieces[lo]
            if preceding.section == first.section:
                longer = join(preceding.text, text)
            else:
                longer = f"{preceding.text}\n\n{text if text.startswith('## ') else _heading(first) + text}"
            if len(longer) <= budget:
                text, lo, grew = longer, lo - 1, True
    return text, lo, hi


def section_text(pieces: dict[int, Piece], index: int, budget: int) -> tuple[str, int, int]:
    """The text around chunk `index` within `budget` characters, and the first and last chunk it
    holds: the chunk, then the rest of its section (next chunks first), then — when the whole
    section fits with room to spare — the neighbouring sections of the document, each under its
    heading path."""
    text, lo, hi = _grow(pieces, index, budget, continued_tables(pieces[index].text), index, index, same_section=True)
    text, lo, hi = _grow(pieces, index, budget, text, lo, hi, same_section=False)
    if lo < index and pieces[lo].section != pieces[index].section and not text.startswith("## "):
        text = _heading(pieces[lo]) + text
    return text, lo, hi


async def _pieces(runtime: "Runtime", name: str, source: str, indexes: list[int], reach: int,
                  flt: models.Filter | None) -> dict[int, Piece]:
    """The chunks of `source` within `reach` of `indexes` that the search may see (same filter)."""
    conditions: list[object] = [
        models.FieldCondition(key="source", match=models.MatchValue(value=source)),
        models.FieldCondition(key="chunk_index", range=models.Range(gte=min(indexes) - reach, lte=max(indexes) + reach)),
    ]
    if flt is not None:
        conditions.append(flt)
    found: dict[int, Piece] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(
            name, scroll_filter=models.Filter(must=conditions), limit=256, offset=offset,
            with_payload=["text", "section", "chunk_index"], with_vectors=False,
        )
        for point in points:
            payload = point.payload or {}
            found[int(payload.get("chunk_index", 0))] = Piece(str(payload.get("section", "")), str(payload.get("text", "")))
        if offset is None:
            return found


async def expand(runtime: "Runtime", name: str, passages: list[P], *, budget: int,
                 flt: models.Filter | None = None) -> list[P]:
    """`passages` in the same order, each with its section `context` (within `budget`
    characters), less those whose chunk an earlier passage's context already holds."""
    if budget <= 0 or not passages:
        return passages
    reach = budget // MIN_CHUNK_CHARS + 1
    by_source: dict[str, list[int]] = {}
    for p in passages:
        by_source.setdefault(p.source, []).append(p.chunk_index)
    stored = {source: await _pieces(runtime, name, source, indexes, reach, flt) for source, indexes in by_source.items()}
    shown: dict[str, list[tuple[int, int]]] = {}
    out: list[P] = []
    for p in passages:
        spans = shown.setdefault(p.source, [])
        if any(lo <= p.chunk_index <= hi for lo, hi in spans):
            continue
        # what an earlier passage already shows is not shown twice
        pieces = {i: piece for i, piece in stored[p.source].items() if not any(lo <= i <= hi for lo, hi in spans)}
        pieces[p.chunk_index] = Piece(p.section, p.text)  # the matched version of the chunk itself
        context, lo, hi = section_text(pieces, p.chunk_index, max(budget, len(p.text)))
        spans.append((lo, hi))
        out.append(p.model_copy(update={"context": context, "span": (lo, hi)}))
    return out
