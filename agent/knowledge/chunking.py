"""Heading-aware chunking of Markdown-flavoured text.

1. Split the document at ATX headings (`#`..`######`, found by the Markdown parser in
   agent/markdown.py, so never inside a code block); every section keeps its heading path ("Part 2 > Eligibility > Income").
2. Cut each section into units that must never be split: paragraphs, list items, table rows
   (a table's header row is repeated on every chunk the table continues into), and — only
   when a paragraph alone is too long — sentences, then whitespace-separated words. Cuts fall
   on whitespace only, so "$4,106" or "800-735-2989" can never be broken.
3. Pack units greedily up to `chunk_chars`; consecutive chunks of a section share up to
   `overlap` characters of whole units. A short lead-in line ("**Q3: ...?**", "Steps:")
   always stays with what follows it.

Nothing here assumes a Q/A layout: prose, lists, tables and PDF pages go through the same path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agent.markdown import Segment, segments

CHUNKER_VERSION = 3  # bump when chunk boundaries change, so ingestion re-chunks every file
# (2: headings found by the Markdown parser; the sample KB chunks identically, edge cases differ;
# 3: the overlap never carries part of a table)

_SENTENCE_END = re.compile(r"(?<=[a-z0-9%)\]\"'][.!?])\s+(?=\S)")
_TABLE_ROW = re.compile(r"^\s*\|.*\|\s*$")
_TABLE_ROW_LIGHT = re.compile(r"^(\s*)\|.*\|\s*$")  # the same rows, leading whitespace kept
_TABLE_RULE = re.compile(r"^\s*\|?\s*:?-{2,}:?\s*(\|\s*:?-{2,}:?\s*)*\|?\s*$")
_RULE = re.compile(r"^\s*([-*_])(\s*\1){2,}\s*$")  # thematic break: no content
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")
_MD_MARKUP = re.compile(r"[*_`]+")
LEAD_IN_MAX = 240  # a paragraph this short ending with ':' or '?' (or all bold) introduces the next


@dataclass
class Section:
    path: list[str]
    body: str


@dataclass
class Chunk:
    text: str
    section: str  # heading path joined with " > "
    chunk_index: int

    def embed_text(self, title: str) -> str:
        """What gets embedded and BM25-indexed: title and heading path give short chunks context."""
        head = " — ".join(part for part in (title, self.section) if part)
        return f"{head}\n\n{self.text}" if head else self.text


def clean_heading(text: str) -> str:
    return _MD_MARKUP.sub("", text).strip()


def _segments(text: str) -> list[tuple[Segment, list[str]]]:
    """The Markdown parser's top-level blocks, each with its own lines of `text`.

    Only headings matter here, and a table row can never be one or open or close a code block,
    so every table row goes to the parser as a bare `|x|`: a sheet's 5,000-row table would
    otherwise cost the parser a token per cell and an inline parse of each (about 1 s instead
    of 0.1 s). Line counts are kept, so each block's lines are taken back from `text` in order."""
    lines = text.splitlines()
    light = "\n".join(_TABLE_ROW_LIGHT.sub(r"\1|x|", line) if "|" in line else line for line in lines)
    found = segments(light)
    out: list[tuple[Segment, list[str]]] = []
    position = 0
    for segment in found:
        out.append((segment, lines[position : position + len(segment.lines)]))
        position += len(segment.lines)
    if position != len(lines):  # the parser dropped or split a line after all: parse the text itself
        return [(segment, list(segment.lines)) for segment in segments(text)]
    return out


def split_sections(text: str, title: str = "") -> list[Section]:
    """Sections in document order, each with its heading path (the document's H1 is the title).
    Headings are found by the Markdown parser (agent/markdown.py), so a `#` line inside a
    code block is never one."""
    sections: list[Section] = []
    stack: list[tuple[int, str]] = []
    body: list[str] = []

    def flush() -> None:
        content = "\n".join(body).strip()
        if content:
            sections.append(Section(path=[h for _, h in stack], body=content))
        body.clear()

    for segment, lines in _segments(text):
        if segment.kind != "heading":
            body.extend(lines)
            continue
        flush()
        level, heading = segment.level, clean_heading(segment.title)
        while stack and stack[-1][0] >= level:
            stack.pop()
        if level == 1 and (not stack) and (not title or heading == title):
            stack.append((level, ""))  # the title heading: implied by the document title
        else:
            stack.append((level, heading))
    flush()
    for s in sections:
        s.path = [h for h in s.path if h]
    return sections


def _blocks(body: str) -> list[str]:
    """Paragraphs, list items (with their continuation lines) and tables (one block each)."""
    blocks: list[str] = []
    current: list[str] = []
    kind: str | None = None  # "table" | "list" | "para"

    def flush() -> None:
        nonlocal kind
        if current:
            blocks.append("\n".join(current).strip())
        current.clear()
        kind = None

    for line in body.splitlines():
        if not line.strip() or _RULE.match(line):
            flush()
        elif _TABLE_ROW.match(line):
            if kind != "table":
                flush()
            current.append(line)
            kind = "table"
        elif _LIST_ITEM.match(line):
            flush()
            current.append(line)
            kind = "list"
        else:
            if kind == "table":
                flush()
            current.append(line)
            kind = kind or "para"
    flush()
    return [b for b in blocks if b]


def _is_table(block: str) -> bool:
    lines = block.splitlines()
    return len(lines) > 1 and all(_TABLE_ROW.match(ln) for ln in lines)


def _is_lead_in(block: str) -> bool:
    if len(block) > LEAD_IN_MAX or _is_table(block):
        return False
    stripped = block.strip()
    plain = _MD_MARKUP.sub("", stripped).strip()
    bold_only = stripped.startswith("**") and stripped.endswith("**") and stripped.count("**") == 2
    return bold_only or plain.endswith((":", "?"))


def _split_long(block: str, limit: int) -> list[str]:
    """Pieces of a too-long block, cut between table rows, lines, sentences, then words."""
    if len(block) <= limit:
        return [block]
    if _is_table(block):
        lines = block.splitlines()
        header: list[str] = []
        if len(lines) > 2 and _TABLE_RULE.match(lines[1]):
            header, lines = lines[:2], lines[2:]
        pieces, current = [], list(header)
        for row in lines:
            if len(current) > len(header) and len("\n".join(current + [row])) > limit:
                pieces.append("\n".join(current))
                current = list(header)
            current.append(row)  # a row is never cut, even when longer than the limit
        pieces.append("\n".join(current))
        return pieces
    for splitter in (re.compile(r"\n"), _SENTENCE_END, re.compile(r"\s+")):
        parts = [p for p in splitter.split(block) if p.strip()]
        if len(parts) > 1:
            joiner = "\n" if splitter.pattern == r"\n" else " "
            return _pack_words(parts, limit, joiner, recurse=splitter.pattern != r"\s+")
    return [block]  # one enormous token: leave it whole rather than cut inside it


def _pack_words(parts: list[str], limit: int, joiner: str, *, recurse: bool) -> list[str]:
    pieces: list[str] = []
    current = ""
    for part in parts:
        sub = _split_long(part, limit) if recurse and len(part) > limit else [part]
        for piece in sub:
            candidate = f"{current}{joiner}{piece}" if current else piece
            if current and len(candidate) > limit:
                pieces.append(current)
                current = piece
            else:
                current = candidate
    if current:
        pieces.append(current)
    return pieces


def _units(body: str, limit: int, overlap: int = 0) -> list[str]:
    blocks = _blocks(body)
    merged: list[str] = []
    for block in blocks:  # glue lead-ins to the block they introduce
        if merged and _is_lead_in(merged[-1]) and len(merged[-1]) + len(block) + 2 <= limit:
            merged[-1] = f"{merged[-1]}\n\n{block}"
        else:
            merged.append(block)
    units: list[str] = []
    piece_limit = max(limit - overlap, limit // 2)  # leave room for the overlap carried in
    for block in merged:
        units.extend(_split_long(block, limit) if len(block) <= limit else _split_long(block, piece_limit))
    return units


def _has_table(unit: str) -> bool:
    return any(_TABLE_ROW.match(line) for line in unit.splitlines())


def _tail(units: list[str], overlap: int) -> list[str]:
    """Whole trailing units of a chunk that fit in `overlap` characters. Nothing holding a table
    row is carried: a table goes on with its header repeated, and cutting it into sentences would
    carry half a row ("Visitors wait here. |")."""
    tail: list[str] = []
    size = 0
    for unit in reversed(units):
        if _has_table(unit) or size + len(unit) > overlap:
            break
        tail.insert(0, unit)
        size += len(unit) + 2
    if not tail and units and not _has_table(units[-1]):
        sentences = _SENTENCE_END.split(units[-1])
        for sentence in reversed(sentences[1:]):  # never the whole unit: that would duplicate it
            if size + len(sentence) > overlap:
                break
            tail.insert(0, sentence)
            size += len(sentence) + 1
        if tail:
            tail = [" ".join(tail)]
    return tail


def chunk_section(body: str, chunk_chars: int, overlap: int) -> list[str]:
    units = _units(body, chunk_chars, overlap)
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    fresh = 0  # units in `current` not carried over from the previous chunk
    for unit in units:
        if current and fresh and size + 2 + len(unit) > chunk_chars:
            chunks.append("\n\n".join(current))
            current = _tail(current, overlap) if overlap > 0 else []
            size = sum(len(u) + 2 for u in current)
            fresh = 0
            if current and size + len(unit) > chunk_chars:
                current, size = [], 0
        current.append(unit)
        size += len(unit) + 2
        fresh += 1
    if current and fresh:
        chunks.append("\n\n".join(current))
    return chunks


def chunk_document(text: str, *, title: str = "", chunk_chars: int = 1200, overlap: int = 150) -> list[Chunk]:
    """Chunks of a document in order, each with its section's heading path."""
    chunks: list[Chunk] = []
    for section in split_sections(text, title):
        path = " > ".join(section.path)
        for piece in chunk_section(section.body, chunk_chars, overlap):
            chunks.append(Chunk(text=piece, section=path, chunk_index=len(chunks)))
    return chunks
