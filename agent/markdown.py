"""The one Markdown splitter: top-level blocks of a Markdown text, found by a real
CommonMark parser (markdown-it-py, with GFM tables) instead of line regexes.

Both consumers need the same thing — where headings, code blocks and tables are, so that
nothing is ever cut inside a code fence and no `#` line inside one is taken for a
heading — and then work on the *raw source lines* of each block, so the text they emit is
exactly the text given:

- knowledge chunking (agent/knowledge/chunking.py) splits documents at ATX headings;
- Slack message splitting (bot/slack/blocks.py) keeps code blocks and tables whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from markdown_it import MarkdownIt

Kind = Literal["heading", "code", "table", "text"]

_PARSER = MarkdownIt("commonmark").enable("table")
_KINDS: dict[str, Kind] = {"heading_open": "heading", "fence": "code", "code_block": "code", "table_open": "table"}


@dataclass(frozen=True)
class Segment:
    kind: Kind  # "text" = anything else (paragraphs, lists, quotes, rules, HTML, blank lines)
    lines: tuple[str, ...]  # the raw source lines
    level: int = 0  # heading level (1-6)
    title: str = ""  # heading text, as written

    @property
    def text(self) -> str:
        return "\n".join(self.lines)


def segments(text: str) -> list[Segment]:
    """The text's lines grouped into top-level blocks, in order; together they hold every
    line once. Only ATX headings (`# Title`) count as headings: a setext underline stays text."""
    lines = text.splitlines()
    tokens = _PARSER.parse("\n".join(lines))
    out: list[Segment] = []
    pending: list[str] = []  # text lines not yet emitted
    position = 0

    def flush() -> None:
        if pending:
            out.append(Segment("text", tuple(pending)))
            pending.clear()

    for index, token in enumerate(tokens):
        if token.level != 0 or token.map is None or token.nesting == -1:
            continue
        start, end = token.map
        kind = _KINDS.get(token.type, "text")
        if kind == "heading" and not token.markup.startswith("#"):
            kind = "text"  # setext heading: its lines are ordinary text here
        pending.extend(lines[position:start])
        position = max(position, start)
        if kind == "text":
            pending.extend(lines[position:end])
        else:
            flush()
            block = tuple(lines[position:end])
            if kind == "heading":
                out.append(Segment("heading", block, level=len(token.markup), title=tokens[index + 1].content))
            else:
                out.append(Segment(kind, block))
        position = max(position, end)
    pending.extend(lines[position:])
    flush()
    return out
