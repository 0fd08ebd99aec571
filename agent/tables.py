"""Markdown tables as data: a header and rows of cells, found by the CommonMark parser
(markdown-it-py with GFM tables, as agent/markdown.py) and written back per surface.

A surface shows a table as a table (a Slack table block, a Teams Adaptive Card table, a rich
table in the terminal) or, where it cannot, as aligned monospace text. Whatever the surface's
size limit, a table is only ever cut between rows, each piece with its header
(`Table.pieces`): a row is the unit of meaning ("$2,001 to $25,000 | $95 plus $11.50 per
$1,000"), and half a row states something the document does not.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterator
from typing import Literal

from markdown_it import MarkdownIt
from pydantic import BaseModel

from agent.markdown import segments

Align = Literal["left", "center", "right", ""]

_PARSER = MarkdownIt("commonmark").enable("table")
_ALIGN = re.compile(r"text-align:(left|center|right)")
_CELL_SPACE = re.compile(r"\s+")


class Table(BaseModel):
    """One table: its header cells, its rows (each as long as the header) and each column's
    alignment. Cells hold their inline Markdown as written (`**bold**`, links)."""

    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...] = ()
    align: tuple[Align, ...] = ()

    @property
    def width(self) -> int:
        return len(self.header)

    def with_rows(self, rows: "tuple[tuple[str, ...], ...] | list[tuple[str, ...]]") -> "Table":
        """The same header and alignment over other rows (a piece, or the rows that answer)."""
        return Table(header=self.header, rows=tuple(rows), align=self.align)

    # --- Markdown -------------------------------------------------------------------------

    def markdown_row(self, cells: tuple[str, ...]) -> str:
        return "| " + " | ".join(_cell(c) for c in cells) + " |"

    def markdown(self) -> str:
        """A GFM pipe table: header, delimiter row, one line per row."""
        rule = {"left": ":---", "center": ":---:", "right": "---:"}
        delimiter = "|" + "|".join(rule.get(a, "---") for a in (*self.align, *[""] * self.width)[: self.width]) + "|"
        return "\n".join([self.markdown_row(self.header), delimiter, *(self.markdown_row(r) for r in self.rows)])

    # --- plain text ----------------------------------------------------------------------

    def plain_header(self) -> tuple[str, ...]:
        return tuple(plain_cell(c) for c in self.header)

    def plain_rows(self) -> list[tuple[str, ...]]:
        return [tuple(plain_cell(c) for c in row) for row in self.rows]

    def monospace(self) -> str:
        """Aligned columns of plain text (for a code block): header, a rule, the rows."""
        lines = [self.plain_header(), *self.plain_rows()]
        widths = [max(_display_width(line[i]) for line in lines) for i in range(self.width)]

        def line(cells: tuple[str, ...]) -> str:
            out = []
            for i, cell in enumerate(cells):
                pad = " " * (widths[i] - _display_width(cell))
                out.append(pad + cell if (self.align[i:i + 1] or ("",))[0] == "right" else cell + pad)
            return "  ".join(out).rstrip()

        rule = "  ".join("-" * w for w in widths)
        return "\n".join([line(lines[0]), rule, *(line(cells) for cells in lines[1:])])

    # --- cutting between rows --------------------------------------------------------------

    def pieces(self, limit: int, size: Callable[["Table"], int] | None = None) -> list["Table"]:
        """The table cut between rows into pieces of at most `limit` (by `size`, default the
        Markdown's length), each with the header. A single row larger than `limit` is a piece
        of its own: a row is never cut."""
        measure = size or (lambda t: len(t.markdown()))
        if measure(self) <= limit or len(self.rows) <= 1:
            return [self]
        out: list[Table] = []
        current: list[tuple[str, ...]] = []
        for row in self.rows:
            if current and measure(self.with_rows([*current, row])) > limit:
                out.append(self.with_rows(current))
                current = []
            current.append(row)
        if current:
            out.append(self.with_rows(current))
        return out


def _cell(text: str) -> str:
    """A cell's text on one line, its pipes escaped: it cannot end the cell or the row."""
    text = _CELL_SPACE.sub(" ", text).strip()
    return re.sub(r"(?<!\\)\|", r"\\|", text)


def plain_cell(text: str) -> str:
    """A cell's inline Markdown as the text it shows (`**$95**` -> `$95`, a link -> its label)."""
    if not any(ch in text for ch in "*_`[]<>\\&!~"):
        return _CELL_SPACE.sub(" ", text).strip()
    out: list[str] = []
    for token in _PARSER.parseInline(text):
        for child in token.children or []:
            if child.type in ("text", "code_inline", "html_inline"):
                out.append(child.content)
            elif child.type in ("softbreak", "hardbreak"):
                out.append(" ")
    return _CELL_SPACE.sub(" ", "".join(out)).strip()


def _display_width(text: str) -> int:
    """Columns `text` takes in a monospace font (wide East Asian characters take two)."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def parse_table(source: str) -> Table | None:
    """The first GFM table in `source` (Markdown), or None."""
    tokens = _PARSER.parse(source)
    header: list[str] = []
    align: list[Align] = []
    rows: list[tuple[str, ...]] = []
    row: list[str] | None = None
    in_head = False
    seen = False
    for i, token in enumerate(tokens):
        if token.type == "table_open":
            if seen:
                break
            seen = True
        elif token.type == "table_close":
            break
        elif token.type == "thead_open":
            in_head = True
        elif token.type == "thead_close":
            in_head = False
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            content = tokens[i + 1].content if i + 1 < len(tokens) and tokens[i + 1].type == "inline" else ""
            if row is not None:
                row.append(content)
            if in_head:
                m = _ALIGN.search(str(token.attrs.get("style", "")))
                align.append(m.group(1) if m else "")  # type: ignore[arg-type]
        elif token.type == "tr_close" and row is not None:
            if in_head:
                header = row
            else:
                rows.append(tuple((row + [""] * len(header))[: len(header)]))
            row = None
    if not seen or not header:
        return None
    return Table(header=tuple(header), rows=tuple(rows), align=tuple(align))


Block = str | Table


def blocks(text: str) -> list[Block]:
    """`text` as its tables (parsed) and the Markdown between them (as written), in order."""
    out: list[Block] = []
    pending: list[str] = []
    for segment in segments(text):
        table = parse_table(segment.text) if segment.kind == "table" else None
        if table is None:
            pending.extend(segment.lines)
            continue
        if "\n".join(pending).strip():
            out.append("\n".join(pending).strip("\n"))
        pending = []
        out.append(table)
    if "\n".join(pending).strip():
        out.append("\n".join(pending).strip("\n"))
    return out


def has_table(text: str) -> bool:
    """Whether `text` holds a GFM table (a quick look for a delimiter row first)."""
    return "|" in text and "-" in text and any(isinstance(b, Table) for b in blocks(text))


def tables(text: str) -> Iterator[Table]:
    return (b for b in blocks(text) if isinstance(b, Table))


def join(parts: list[Block]) -> str:
    """Blocks back to Markdown, a blank line between them."""
    return "\n\n".join(p.markdown() if isinstance(p, Table) else p for p in parts)
