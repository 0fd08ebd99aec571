"""Word (.docx), PowerPoint (.pptx) and Excel (.xlsx/.xlsm) files as Markdown-flavoured text.

The output feeds the same heading-aware chunker as every other format, so structure is kept
the way Markdown says it: Word's Title and Heading 1..9 styles become `#` headings, list
paragraphs stay list items, and every table becomes a Markdown table (header row, separator,
one line per row: the chunker cuts only between rows and repeats the header row). Each slide is
a `## Slide N: <title>` section with its text, tables, charts and speaker notes; each sheet a
`## <sheet name>` section with its used range as a table. python-docx, python-pptx and
openpyxl open the packages; the Word body is walked on its XML directly because
`Paragraph.text` leaves out text inside content controls, fields and tracked insertions.

These libraries are imported only when such a file is read (a one-shot `askdesk ask` must not
pay for lxml). Damaged, encrypted or mislabelled files raise LoadError with a short reason.
"""

from __future__ import annotations

import datetime as dt
import io
import re
import warnings
import zipfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agent.knowledge.documents import POWERPOINT_SUFFIXES, WORD_SUFFIXES, Document, LoadError, title_from_name

OFFICE_MAX_UNPACKED = 300_000_000  # bytes a package may unpack to (a zip bomb is refused before parsing)
XLSX_MAX_ROWS = 5000  # non-empty rows read per sheet (as for a CSV); the rest is said, not read
XLSX_MAX_COLUMNS = 50  # non-empty columns kept per sheet: a wider row would not fit one chunk anyway
XLSX_SCAN_COLUMNS = 200  # cells of a row looked at (a stray value in column ZZ is not worth a 700-wide row)
XLSX_SCAN_ROWS = 200_000  # rows of a sheet scanned, empty ones included (whole-sheet formatting writes those)
XLSX_MAX_WORKBOOK_ROWS = 50_000  # rows read from one workbook in all; later sheets are named, not read

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"  # compound file: old .doc/.xls/.ppt, or an encrypted package
_MARKDOWN_START = re.compile(r"^\s{0,3}(#{1,6}(\s|$)|`{3}|~{3})")  # would open a heading or a code fence


def sniff(data: bytes) -> str | None:
    """The Office suffix of a package told by its parts (a download with no usable name), or None."""
    if not data.startswith(b"PK\x03\x04"):
        return None
    try:
        names = set(zipfile.ZipFile(io.BytesIO(data)).namelist())
    except (zipfile.BadZipFile, ValueError):
        return None
    for part, suffix in (("word/document.xml", ".docx"), ("ppt/presentation.xml", ".pptx"),
                         ("xl/workbook.xml", ".xlsx")):
        if part in names:
            return suffix
    return None


def old_office_reason(data: bytes) -> str | None:
    """Why a compound (OLE) file cannot be read: it is an old binary format or password-protected."""
    if data.startswith(_OLE_MAGIC):
        return "an old binary Office file (.doc/.xls/.ppt) or a password-protected one: save it as .docx/.xlsx/.pptx"
    return None


def load_office(path: Path, source: str, data: bytes) -> Document:
    """Dispatch on the suffix (one of OFFICE_SUFFIXES)."""
    suffix = path.suffix.lower()
    if path.name.startswith("~$"):
        raise LoadError("an Office lock file (the document is open in Word, Excel or PowerPoint), not a document")
    _check_package(data, suffix)
    load = load_docx if suffix in WORD_SUFFIXES else load_pptx if suffix in POWERPOINT_SUFFIXES else load_xlsx
    try:
        return load(path, source, data)
    except (LoadError, MemoryError):
        raise
    except Exception as exc:  # the parsers raise many types on a damaged package: one file's problem, never the run's
        raise LoadError(f"unreadable {_KIND.get(suffix, 'Office file')} "
                        f"({type(exc).__name__}: {str(exc)[:160]})") from exc


_KIND = {".docx": "Word document", ".pptx": "PowerPoint file", ".xlsx": "Excel workbook", ".xlsm": "Excel workbook"}


def _check_package(data: bytes, suffix: str) -> None:
    """Refuse what is not a zip package, or one that would unpack to more than OFFICE_MAX_UNPACKED."""
    kind = _KIND.get(suffix, "Office file")
    reason = old_office_reason(data)
    if reason:
        raise LoadError(reason)
    try:
        infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    except (zipfile.BadZipFile, ValueError) as exc:
        raise LoadError(f"unreadable {kind} (not a valid Office file: {exc})") from exc
    unpacked = sum(info.file_size for info in infos)  # zipfile never inflates a member past its declared size
    if unpacked > OFFICE_MAX_UNPACKED:
        raise LoadError(f"{kind} unpacks to {unpacked / 1e6:,.0f} MB, over the {OFFICE_MAX_UNPACKED / 1e6:g} MB limit")


# --- shared Markdown output -------------------------------------------------------------------


def cell_text(value: str) -> str:
    """One table cell on one line: whitespace collapsed, `|` (the cell separator) made `/`."""
    return " ".join(value.split()).replace("|", "/")


def markdown_table(rows: list[list[str]]) -> list[str]:
    """Lines of a Markdown table: fully empty rows and columns dropped, the first row the header,
    then the `|---|` separator (the chunker repeats header and separator on every continuation)."""
    rows = [[cell_text(c) for c in row] for row in rows]
    rows = [row for row in rows if any(row)]
    if not rows:
        return []
    width = max(len(row) for row in rows)
    rows = [row + [""] * (width - len(row)) for row in rows]
    keep = [i for i in range(width) if any(row[i] for row in rows)]
    rows = [[row[i] for i in keep] for row in rows]
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(keep)]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return lines


def escape_line(line: str) -> str:
    """A line of body text that Markdown would read as a heading or a code fence, escaped."""
    return "\\" + line.lstrip() if _MARKDOWN_START.match(line) else line


class _Blocks:
    """Markdown blocks in order: paragraphs and tables apart (a blank line), list items of one
    list on consecutive lines."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self._list: object = None  # the list the last block belongs to (None: not a list)

    def block(self, text: str) -> None:
        if text.strip():
            self.parts.append(text)
            self._list = None

    def paragraph(self, text: str) -> None:
        lines = [escape_line(ln.strip()) for ln in text.splitlines() if ln.strip()]
        self.block("\n".join(lines))

    def item(self, text: str, marker: str = "-", level: int = 0, list_id: object = "") -> None:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        if not lines:
            return
        indent = "   " * level
        item = "\n".join([f"{indent}{marker} {lines[0]}", *(f"{indent}   {ln}" for ln in lines[1:])])
        if self._list is not None and self._list == list_id:
            self.parts[-1] += "\n" + item
        else:
            self.parts.append(item)
        self._list = list_id

    def table(self, rows: list[list[str]]) -> None:
        self.block("\n".join(markdown_table(rows)))

    def text(self) -> str:
        return "\n\n".join(self.parts)


# --- Word ---------------------------------------------------------------------------------------

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_MC_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"
_P, _TBL, _TR, _TC, _R, _T = (f"{_W}{t}" for t in ("p", "tbl", "tr", "tc", "r", "t"))
_SDT, _SDT_CONTENT, _CUSTOM_XML = f"{_W}sdt", f"{_W}sdtContent", f"{_W}customXml"
_TXBX = f"{_W}txbxContent"
_BREAKS = {f"{_W}br", f"{_W}cr"}
_SKIP = {_MC_FALLBACK, f"{_W}pPr", f"{_W}rPr", f"{_W}delText", f"{_W}instrText", f"{_W}tcPr", f"{_W}trPr",
         f"{_W}tblPr", f"{_W}sdtPr", f"{_W}sdtEndPr"}
_WRAPPERS = {_SDT, _SDT_CONTENT, _CUSTOM_XML, f"{_W}ins", f"{_W}smartTag"}  # hold rows, cells or runs
_HEADING_NAME = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_TOC_NAME = re.compile(r"^toc\s*[1-9]$|^toc heading$", re.IGNORECASE)


def _val(el: Any, path: str) -> str | None:
    """The `w:val` attribute of the first `path` child of `el` (e.g. "w:pPr/w:outlineLvl")."""
    found = el.find(path.replace("w:", _W)) if el is not None else None
    return None if found is None else found.get(f"{_W}val")


def _on(el: Any) -> bool:
    """A toggle property (`<w:b/>`, `<w:b w:val="0"/>`) is on."""
    return el is not None and el.get(f"{_W}val", "true").lower() not in {"0", "false", "off"}


class _Word:
    """One pass over a Word body, keeping what Markdown can say of its structure."""

    def __init__(self, document: Any) -> None:
        self.out = _Blocks()
        self.title = ""
        self.first_heading = ""
        self._styles = {s.get(f"{_W}styleId"): s for s in document.styles.element.iterfind(f"{_W}style")
                        if s.get(f"{_W}type") == "paragraph"}
        self._default_style = next((sid for sid, s in self._styles.items() if _on_attr(s.get(f"{_W}default"))), None)
        self._style_info: dict[str | None, tuple[int, bool, tuple[str, str] | None]] = {}
        self._formats = self._numbering(document)
        self._counters: dict[str, list[int]] = {}

    @staticmethod
    def _numbering(document: Any) -> dict[tuple[str, str], tuple[str, int]]:
        """(numId, ilvl) -> (number format, start) from the numbering part ("bullet", "decimal", …)."""
        try:
            root = document.part.numbering_part.element
        except (KeyError, AttributeError, NotImplementedError):
            return {}
        levels: dict[str, dict[str, tuple[str, int]]] = {}
        for abstract in root.iterfind(f"{_W}abstractNum"):
            aid = abstract.get(f"{_W}abstractNumId")
            levels[aid] = {}
            for lvl in abstract.iterfind(f"{_W}lvl"):
                start = _val(lvl, "w:start") or "1"
                levels[aid][lvl.get(f"{_W}ilvl", "0")] = (_val(lvl, "w:numFmt") or "bullet",
                                                          int(start) if start.isdigit() else 1)
        formats: dict[tuple[str, str], tuple[str, int]] = {}
        for num in root.iterfind(f"{_W}num"):
            for ilvl, fmt in levels.get(_val(num, "w:abstractNumId") or "", {}).items():
                formats[(num.get(f"{_W}numId"), ilvl)] = fmt
        return formats

    def _style(self, style_id: str | None, depth: int = 0) -> tuple[int, bool, tuple[str, str] | None]:
        """(heading level, 0 for body text, -1 for a table-of-contents line; is the Title style;
        list numbering) of a paragraph style, inherited along `w:basedOn`."""
        if style_id in self._style_info:
            return self._style_info[style_id]
        style = self._styles.get(style_id)
        info: tuple[int, bool, tuple[str, str] | None] = (0, False, None)
        if style is not None and depth < 20:
            name = (_val(style, "w:name") or "").strip()
            numpr = style.find(f"{_W}pPr/{_W}numPr")
            numbering = None
            if numpr is not None:
                numbering = (_val(numpr, "w:numId") or "0", _val(numpr, "w:ilvl") or "0")
            outline = _val(style, "w:pPr/w:outlineLvl")
            heading = _HEADING_NAME.match(name)
            if name.lower() == "title":
                info = (1, True, numbering)
            elif _TOC_NAME.match(name):
                info = (-1, False, None)  # a generated table of contents repeats the headings
            elif heading:
                info = (int(heading.group(1)), False, numbering)
            elif outline is not None and outline.isdigit() and int(outline) < 9:
                info = (int(outline) + 1, False, numbering)
            else:
                base = self._style(_val(style, "w:basedOn"), depth + 1)
                info = (base[0], base[1], numbering or base[2])
        self._style_info[style_id] = info
        return info

    def body(self, el: Any) -> None:
        for child in el:
            tag = child.tag
            if tag == _P:
                self.paragraph(child)
            elif tag == _TBL:
                self.out.table(self.table(child))
            elif tag == _SDT and child.find(f".//{_W}docPartGallery[@{_W}val='Table of Contents']") is not None:
                continue  # a generated table of contents repeats the headings
            elif tag in _WRAPPERS:
                self.body(child)

    def paragraph(self, p: Any) -> None:
        text, bold, boxes = self.runs(p)
        style_id = _val(p, "w:pPr/w:pStyle") or self._default_style
        level, is_title, numbering = self._style(style_id)
        if level < 0:
            return
        outline = _val(p, "w:pPr/w:outlineLvl")  # set on the paragraph itself
        if not level and outline is not None and outline.isdigit() and int(outline) < 9:
            level = int(outline) + 1
        numpr = p.find(f"{_W}pPr/{_W}numPr")
        if numpr is not None:
            numbering = (_val(numpr, "w:numId") or (numbering or ("0", "0"))[0],
                         _val(numpr, "w:ilvl") or (numbering or ("0", "0"))[1])
        line = " ".join(text.split())
        if line and level:
            self.out.block("#" * min(level, 6) + " " + line)
            if is_title and not self.title:
                self.title = line
            if level == 1 and not self.first_heading:
                self.first_heading = line
        elif text.strip() and numbering and numbering[0] != "0":
            self.list_item(text, numbering)
        elif text.strip():
            lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
            if bold and len(lines) == 1 and len(lines[0]) <= 240:
                self.out.block(f"**{lines[0]}**")  # a bold line is a heading in all but style: a lead-in
            else:
                self.out.paragraph(text)
        for box in boxes:  # text boxes anchored in this paragraph
            self.body(box)

    def list_item(self, text: str, numbering: tuple[str, str]) -> None:
        num_id, ilvl_text = numbering
        ilvl = int(ilvl_text) if ilvl_text.isdigit() else 0
        fmt, start = self._formats.get((num_id, ilvl_text), ("bullet", 1))
        counts = self._counters.setdefault(num_id, [])
        counts[ilvl + 1:] = []  # a new item restarts the numbering of deeper levels
        counts.extend([0] * (ilvl + 1 - len(counts)))
        counts[ilvl] += 1
        marker = "-" if fmt in {"bullet", "none"} else f"{start - 1 + counts[ilvl]}."
        self.out.item(text, marker, min(ilvl, 8), num_id)

    def runs(self, el: Any) -> tuple[str, bool, list[Any]]:
        """The paragraph's text (tabs and breaks kept), whether every character of it is bold,
        and the text boxes it anchors (read as blocks of their own)."""
        parts: list[str] = []
        flags: list[bool] = []
        boxes: list[Any] = []

        def walk(node: Any, bold: bool) -> None:
            for child in node:
                tag = child.tag
                if tag == _T:
                    if child.text:
                        parts.append(child.text)
                        flags.append(bold or not child.text.strip())
                elif tag == _R:
                    walk(child, _on(child.find(f"{_W}rPr/{_W}b")))
                elif tag == f"{_W}tab":
                    parts.append("\t")
                elif tag in _BREAKS:
                    parts.append("\n")
                elif tag == f"{_W}noBreakHyphen":
                    parts.append("-")
                elif tag == _TXBX:
                    boxes.append(child)
                elif tag == _P or tag in _SKIP or not isinstance(tag, str):
                    continue  # a paragraph nested here belongs to a text box; properties hold no text
                else:
                    walk(child, bold)

        walk(el, False)
        text = "".join(parts)
        return text, bool(flags) and all(flags) and bool(text.strip()), boxes

    def cell(self, tc: Any) -> str:
        """A table cell's paragraphs (and any table nested in it) as one line."""
        texts: list[str] = []

        def walk(node: Any) -> None:
            for child in node:
                if child.tag == _P:
                    text, _, boxes = self.runs(child)
                    texts.append(text)
                    for box in boxes:
                        walk(box)
                elif child.tag == _TBL:
                    texts.extend(" / ".join(c for c in row if c) for row in self.table(child))
                elif child.tag in _WRAPPERS:
                    walk(child)

        walk(tc)
        return " ".join(" ".join(t.split()) for t in texts if t.strip())

    def table(self, tbl: Any) -> list[list[str]]:
        """Rows of cell texts on the table's grid: a cell spanning columns fills the first, one
        merged down the rows repeats its text in each (so every row reads on its own)."""
        rows: list[list[str]] = []
        above: dict[int, str] = {}
        for tr in _children(tbl, _TR):
            row: dict[int, str] = {}
            col = int(_val(tr, "w:trPr/w:gridBefore") or 0)
            for tc in _children(tr, _TC):
                span_text = _val(tc, "w:tcPr/w:gridSpan") or "1"
                span = int(span_text) if span_text.isdigit() else 1
                merge = tc.find(f"{_W}tcPr/{_W}vMerge")
                continued = merge is not None and merge.get(f"{_W}val", "continue") == "continue"
                text = above.get(col, "") if continued else self.cell(tc)
                for offset in range(max(span, 1)):
                    row[col + offset] = text if offset == 0 else ""
                    above[col + offset] = row[col + offset]
                col += max(span, 1)
            rows.append([row.get(i, "") for i in range(max(row) + 1)] if row else [])
        return rows


def _on_attr(value: str | None) -> bool:
    return value is not None and value.lower() in {"1", "true", "on"}


def _children(el: Any, tag: str) -> Iterator[Any]:
    """`tag` children of `el`, looking through content-control and custom-XML wrappers."""
    for child in el:
        if child.tag == tag:
            yield child
        elif child.tag in _WRAPPERS:
            yield from _children(child, tag)


def load_docx(path: Path, source: str, data: bytes) -> Document:
    import docx

    document = docx.Document(io.BytesIO(data))
    word = _Word(document)
    body = document.element.body
    word.body(body)
    images = sum(1 for _ in body.iter(f"{_W}drawing", f"{_W}pict"))
    meta_title = (document.core_properties.title or "").strip()
    text = word.out.text().strip()
    if not text:
        if images:
            raise LoadError("no text: the document holds only images (scanned?)")
        raise LoadError("empty document")
    title = meta_title or word.title or word.first_heading or title_from_name(path)
    return Document(source=source, title=title[:200], text=text, format="docx")


# --- PowerPoint ---------------------------------------------------------------------------------


def _pptx_bullet(paragraph: Any, default: bool) -> bool:
    """Whether a slide paragraph shows a bullet: its own `a:bu*` setting, else the placeholder's kind."""
    ppr = paragraph._p.pPr
    if ppr is not None:
        for child in ppr:
            name = child.tag.rsplit("}", 1)[-1] if isinstance(child.tag, str) else ""
            if name == "buNone":
                return False
            if name in {"buChar", "buAutoNum"}:
                return True
    return default or paragraph.level > 0


class _Slide:
    """One slide's text, tables and charts in reading order (top to bottom, then left to right)."""

    def __init__(self) -> None:
        self.out = _Blocks()
        self.pictures = 0

    def shapes(self, shapes: Iterable[Any], skip: int | None) -> None:
        from pptx.enum.shapes import PP_PLACEHOLDER
        from pptx.shapes.group import GroupShape
        from pptx.shapes.picture import Picture

        shapes = [shape for shape in shapes if skip is None or shape.shape_id != skip]
        if len(shapes) > 1:  # a placeholder's position is inherited from its layout: slow to look up
            shapes.sort(key=lambda s: (s.top or 0, s.left or 0))
        for shape in shapes:
            if isinstance(shape, GroupShape):
                self.shapes(shape.shapes, skip)
                continue
            if isinstance(shape, Picture):  # placeholder pictures too
                self.pictures += 1
            if shape.has_table:
                rows = [["" if c.is_spanned else c.text for c in row.cells] for row in shape.table.rows]
                self.out.table(rows)
            elif shape.has_chart:
                self.chart(shape.chart)
            elif shape.has_text_frame:
                bulleted = shape.is_placeholder and shape.placeholder_format.type in {
                    PP_PLACEHOLDER.BODY, PP_PLACEHOLDER.OBJECT}
                for paragraph in shape.text_frame.paragraphs:
                    text = paragraph.text.replace("\v", "\n")
                    if not text.strip():
                        continue
                    if _pptx_bullet(paragraph, bulleted):
                        self.out.item(text, "-", paragraph.level, shape.shape_id)
                    else:
                        self.out.paragraph(text)

    def chart(self, chart: Any) -> None:
        """A chart's title and data (categories by series) as a table: the numbers it shows."""
        try:
            title = chart.chart_title.text_frame.text if chart.has_title else ""
            plot = chart.plots[0]
            categories = [str(c) for c in plot.categories][:100]
            series = [(s.name or "", list(s.values)[: len(categories)]) for s in plot.series][:20]
        except Exception:  # noqa: BLE001 - a chart python-pptx cannot read: the slide's text still counts
            return
        names = ", ".join(name for name, _ in series if name)
        self.out.paragraph("Chart: " + (" ".join(title.split()) or names or "(untitled)"))
        rows = [["", *(name for name, _ in series)]]
        for i, category in enumerate(categories):
            rows.append([category, *(_number(values[i]) if i < len(values) else "" for _, values in series)])
        self.out.table(rows)


def load_pptx(path: Path, source: str, data: bytes) -> Document:
    from pptx import Presentation

    sections: list[str] = []
    pictures = 0
    first_title = ""
    presentation = Presentation(io.BytesIO(data))
    for number, slide in enumerate(presentation.slides, start=1):
        title_shape = slide.shapes.title
        title = " ".join(title_shape.text_frame.text.split()) if title_shape is not None else ""
        first_title = first_title or title
        reader = _Slide()
        reader.shapes(slide.shapes, title_shape.shape_id if title_shape is not None else None)
        pictures += reader.pictures
        if slide.has_notes_slide:
            frame = slide.notes_slide.notes_text_frame
            notes = [" ".join(p.text.split()) for p in frame.paragraphs] if frame is not None else []
            notes = [n for n in notes if n]
            if notes:
                reader.out.block("Notes: " + "\n".join(notes))
        body = reader.out.text()
        if title or body:
            heading = f"## Slide {number}: {title}" if title else f"## Slide {number}"
            sections.append(f"{heading}\n\n{body}".strip())
    meta_title = (presentation.core_properties.title or "").strip()
    if not sections:
        if pictures:
            raise LoadError("no text: the presentation holds only images (scanned?)")
        raise LoadError("empty presentation")
    title = meta_title or first_title or title_from_name(path)
    return Document(source=source, title=title[:200], text="\n\n".join(sections), format="pptx")


# --- Excel --------------------------------------------------------------------------------------

_DECIMALS = re.compile(r"0\.(0+)")
_CURRENCY = re.compile(r"[$€£¥₹]")


def _number(value: Any, number_format: str | None = None) -> str:
    """A number as the sheet shows it where that is cheap to know: percent, currency, thousands
    separators and fixed decimals from the cell's number format; otherwise plainly ("12", "0.5")."""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if not isinstance(value, (int, float)):
        return "" if value is None else str(value)
    fmt = (number_format or "General").split(";")[0]
    if fmt == "General" or "E+" in fmt.upper() or "@" in fmt:
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            return str(int(value))
        return format(value, ".15g") if isinstance(value, float) else str(value)
    plain = re.sub(r'"[^"]*"|\[[^\]]*\]', "", fmt)  # literal text and [colour]/[locale] codes
    decimals = len(m.group(1)) if (m := _DECIMALS.search(plain)) else 0
    if "%" in plain:
        return f"{value * 100:.{decimals}f}%"
    comma = "," if "," in plain else ""
    symbol = m.group(0) if (m := _CURRENCY.search(fmt)) else ""
    shown = f"{abs(value):{comma}.{decimals}f}"
    return ("-" if value < 0 else "") + symbol + shown


def _excel_text(cell: Any) -> str:
    value = cell.value
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, dt.datetime):
        if value.time() == dt.time(0):
            return value.date().isoformat()
        return value.isoformat(sep=" ", timespec="minutes")
    if isinstance(value, (dt.date, dt.time, dt.timedelta)):
        return str(value)
    return _number(value, getattr(cell, "number_format", None))


def _sheet_rows(sheet: Any, budget: int) -> tuple[list[list[str]], str]:
    """The sheet's non-empty rows (at most `budget`, and XLSX_MAX_ROWS), and a note on what was
    left out ("" when nothing was)."""
    rows: list[list[str]] = []
    note = ""
    limit = min(budget, XLSX_MAX_ROWS)
    for scanned, cells in enumerate(sheet.iter_rows(max_col=None), start=1):
        values = [_excel_text(c) for c in cells[:XLSX_SCAN_COLUMNS]]
        if not any(v.strip() for v in values):
            if scanned >= XLSX_SCAN_ROWS:
                note = f"(rows after {scanned:,} not read)"
                break
            continue
        if len(rows) >= limit:
            note = f"(only the first {limit:,} rows of this sheet were read)"
            break
        rows.append(values)
        if scanned >= XLSX_SCAN_ROWS:
            note = f"(rows after {scanned:,} not read)"
            break
    return rows, note


def _caption_rows(rows: list[list[str]]) -> tuple[list[str], list[list[str]]]:
    """Title lines above a table ("Fee schedule 2026" alone in A1): up to three leading rows with
    one value each, when the rows below are wider. They read as text, not as the header row."""
    captions: list[str] = []
    while (len(captions) < 3 and len(rows) > 1 and sum(1 for v in rows[0] if v.strip()) == 1
           and any(sum(1 for v in row if v.strip()) > 1 for row in rows[1:])):
        captions.append(next(v for v in rows[0] if v.strip()))
        rows = rows[1:]
    return captions, rows


def _cap_columns(rows: list[list[str]]) -> tuple[list[list[str]], int]:
    """Rows with only non-empty columns, at most XLSX_MAX_COLUMNS, and how many more there were."""
    width = max((len(r) for r in rows), default=0)
    used = [i for i in range(width) if any(i < len(r) and r[i].strip() for r in rows)]
    kept = used[:XLSX_MAX_COLUMNS]
    return [[r[i] if i < len(r) else "" for i in kept] for r in rows], len(used) - len(kept)


def load_xlsx(path: Path, source: str, data: bytes) -> Document:
    from openpyxl import load_workbook

    sections: list[str] = []
    unread: list[str] = []
    budget = XLSX_MAX_WORKBOOK_ROWS
    with warnings.catch_warnings():  # openpyxl warns about features it drops (data validation, …)
        warnings.simplefilter("ignore")
        workbook = load_workbook(io.BytesIO(data), read_only=True, data_only=True)
        try:
            meta_title = (workbook.properties.title or "").strip()
            for sheet in workbook.worksheets:
                if budget <= 0:
                    unread.append(sheet.title)
                    continue
                sheet.reset_dimensions()  # the stored used range is often wrong; read every row
                rows, note = _sheet_rows(sheet, budget)
                budget -= len(rows)
                if not rows:
                    continue
                captions, rows = _caption_rows(rows)
                rows, more_columns = _cap_columns(rows)
                out = _Blocks()
                for caption in captions:
                    out.paragraph(caption)
                out.table(rows)
                if more_columns:
                    out.block(f"({more_columns} more columns not read)")
                if note:
                    out.block(note)
                sections.append(f"## {' '.join(sheet.title.split())}\n\n{out.text()}")
        finally:
            workbook.close()
    if not sections:
        raise LoadError("empty workbook")
    if unread:
        sections.append(f"(sheets not read, over the {XLSX_MAX_WORKBOOK_ROWS:,}-row limit: {', '.join(unread)})")
    title = meta_title or title_from_name(path)
    return Document(source=source, title=title[:200], text="\n\n".join(sections), format="xlsx")
