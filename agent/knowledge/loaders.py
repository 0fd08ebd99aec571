"""Turn files into text documents: Markdown, plain text, HTML (beautifulsoup4), PDF (pypdf), CSV,
and Word, PowerPoint and Excel (agent/knowledge/office.py: python-docx, python-pptx, openpyxl).

Every loader returns Markdown-flavoured text so one heading-aware chunker serves all formats:
HTML headings become `#` lines and tables `| a | b |` rows; PDF pages become `## Page N`
sections (PDFs carry no reliable headings, but a page number is a useful citation); CSV rows
become a table; Word headings `#` lines, slides `## Slide N: <title>` and sheets `## <name>`
sections. Files that cannot be used raise `LoadError` with a short reason; the caller
reports and skips. `load_document` reads a file for ingestion; `load_bytes` reads bytes that
came another way (a file attached to a question), with the same loaders.
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import os
import re
import stat
import warnings
from pathlib import Path

from agent.knowledge.documents import (  # noqa: F401  (part of this module's API)
    EXCEL_SUFFIXES,
    OFFICE_SUFFIXES,
    POWERPOINT_SUFFIXES,
    WORD_SUFFIXES,
    Document,
    LoadError,
    title_from_name,
)
from agent.yamlio import safe_load

# pypdf reports recoverable damage ("incorrect startxref pointer") as log warnings: without
# logging configured Python prints them bare on stderr, between our progress lines. A file
# that cannot be read is reported by name instead (LoadError).
logging.getLogger("pypdf").addHandler(logging.NullHandler())

TEXT_SUFFIXES = {".md", ".markdown", ".txt", ".text", ".rst"}
HTML_SUFFIXES = {".html", ".htm", ".xhtml"}
PDF_SUFFIXES = {".pdf"}
# what `ingest` reads from a folder
SUPPORTED_SUFFIXES = TEXT_SUFFIXES | HTML_SUFFIXES | PDF_SUFFIXES | OFFICE_SUFFIXES
# CSV files in a knowledge folder are usually a registry's rows (docs/registries.md),
# so ingest leaves them alone; a CSV attached to a question is read as a table
CSV_SUFFIXES = {".csv", ".tsv"}
_KNOWN_SUFFIXES = SUPPORTED_SUFFIXES | CSV_SUFFIXES

_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)
_FRONT_MATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n", re.DOTALL)


# UTF-32 before UTF-16: the UTF-32-LE mark begins with the UTF-16-LE one
_BOMS = [(codecs.BOM_UTF32_LE, "utf-32", "UTF-32"), (codecs.BOM_UTF32_BE, "utf-32", "UTF-32"),
         (codecs.BOM_UTF16_LE, "utf-16", "UTF-16"), (codecs.BOM_UTF16_BE, "utf-16", "UTF-16")]


def _wide_text(data: bytes) -> str | None:
    """The text of a UTF-16/UTF-32 file that starts with its byte-order mark (Windows tools
    write these); None for any other file. Their NUL bytes are not a sign of a binary file."""
    for bom, codec, label in _BOMS:
        if data.startswith(bom):
            try:
                return data.decode(codec)  # the codec reads the mark and drops it
            except UnicodeDecodeError as exc:
                raise LoadError(f"not valid {label} text (at byte {exc.start})") from None
    return None


def _looks_binary(text: str) -> bool:
    controls = sum(1 for ch in text[:8192] if ord(ch) < 32 and ch not in "\r\n\t\f")
    return controls > len(text[:8192]) * 0.01 or text.count("\ufffd") > len(text) * 0.01


def _decode(data: bytes) -> str:
    wide = _wide_text(data)
    if wide is not None:
        if _looks_binary(wide):
            raise LoadError("binary file (not valid text)")
        return wide
    if b"\x00" in data[:8192]:
        raise LoadError("binary file")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        pass
    text = data.decode("cp1252", errors="replace")
    if _looks_binary(text):
        raise LoadError("binary file (not valid text)")
    return text


def _load_markdown(path: Path, source: str, data: bytes) -> Document:
    text = _decode(data)
    url = None
    title = None
    restricted: list[str] | None = None
    fm = _FRONT_MATTER.match(text)
    if fm:
        import yaml

        try:
            meta = safe_load(fm.group(1)) or {}
        except yaml.YAMLError:
            meta = {}
        if isinstance(meta, dict):
            title = str(meta["title"]) if meta.get("title") else None
            url = str(meta["url"]) if meta.get("url") else None
            audience = meta.get("audience")
            if isinstance(audience, (str, list)) and audience != "everyone":
                restricted = [str(a) for a in ([audience] if isinstance(audience, str) else audience)]
        text = text[fm.end() :]
    h1 = _H1.search(text)
    title = title or (h1.group(1).strip() if h1 else title_from_name(path))
    fmt = "markdown" if path.suffix.lower() in {".md", ".markdown"} else "text"
    return Document(source=source, title=title, text=text, format=fmt, url=url, audience=restricted)


_BLOCKS = ["h1", "h2", "h3", "h4", "h5", "h6", "p", "li", "tr", "pre", "blockquote", "dt", "dd", "caption"]


def _load_html(path: Path, source: str, data: bytes) -> Document:
    from bs4 import BeautifulSoup

    wide = _wide_text(data)
    soup = BeautifulSoup(data if wide is None else wide, "html.parser")
    for tag in soup(["script", "style", "noscript", "nav", "footer", "header", "form", "svg", "template"]):
        tag.decompose()
    url = None
    canonical = soup.find("link", rel="canonical") or soup.find("meta", property="og:url")
    if canonical is not None:
        url = canonical.get("href") or canonical.get("content")
    h1 = soup.find("h1")
    title = (soup.title.get_text(" ", strip=True) if soup.title else "") or (
        h1.get_text(" ", strip=True) if h1 else ""
    )
    root = soup.body or soup
    lines: list[str] = []
    block_set = set(_BLOCKS)
    for el in root.find_all(_BLOCKS):
        if any(parent.name in block_set for parent in el.parents if parent is not root) and el.name != "tr":
            continue  # nested block: its text is part of the enclosing block
        if el.name == "tr":
            cells = [c.get_text(" ", strip=True).replace("|", "/") for c in el.find_all(["th", "td"])]
            if cells:
                lines.append("| " + " | ".join(cells) + " |")
            continue
        text = el.get_text(" ", strip=True)
        if not text:
            continue
        if el.name[0] == "h" and el.name[1:].isdigit():
            lines.extend(["", "#" * int(el.name[1:]) + " " + text, ""])
        elif el.name == "li":
            lines.append("- " + text)
        else:
            lines.extend([text, ""])
    body = "\n".join(lines)
    body = re.sub(r"\n{3,}", "\n\n", body).strip()
    if not body:  # a page of bare text without block tags
        body = root.get_text("\n", strip=True)
    return Document(source=source, title=title or title_from_name(path), text=body, format="html", url=url)


def _load_pdf(path: Path, source: str, data: bytes) -> Document:
    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    try:
        with warnings.catch_warnings():  # pypdf's recoverable-damage warnings: not the user's concern
            warnings.simplefilter("ignore")
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not reader.decrypt(""):
                raise LoadError("encrypted PDF")
            pages = [(page.extract_text() or "").strip() for page in reader.pages]
            meta_title = (reader.metadata.title if reader.metadata else None) or ""
    except LoadError:
        raise
    except (PdfReadError, ValueError, KeyError, TypeError) as exc:
        raise LoadError(f"unreadable PDF ({type(exc).__name__}: {exc})") from exc
    sections = [f"## Page {i}\n\n{text}" for i, text in enumerate(pages, start=1) if text]
    if not sections:
        raise LoadError("PDF has no extractable text (scanned images?)")
    first_line = next((ln.strip() for ln in pages[0].splitlines() if ln.strip()), "") if pages else ""
    title = str(meta_title).strip() or first_line[:120] or title_from_name(path)
    return Document(source=source, title=title, text="\n\n".join(sections), format="pdf")


CSV_MAX_ROWS = 5000  # rows of an attached CSV turned into table text (the rest is counted, not read)


def _load_csv(path: Path, source: str, data: bytes) -> Document:
    """A CSV (or TSV) file as one Markdown table: the header row, then a row per record."""
    text = _decode(data)
    sample = text[:8192]
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(sample, delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    try:
        rows = [[" ".join(cell.split()).replace("|", "/") for cell in row]
                for row in csv.reader(io.StringIO(text), dialect)]
    except csv.Error as exc:
        raise LoadError(f"unreadable CSV ({exc})") from exc
    rows = [row for row in rows if any(row)]
    if not rows:
        raise LoadError("empty file")
    header, body = rows[0], rows[1 : CSV_MAX_ROWS + 1]
    width = max(len(row) for row in [header, *body])
    lines = ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in [header]]
    lines.append("|" + "---|" * width)
    lines += ["| " + " | ".join(row + [""] * (width - len(row))) + " |" for row in body]
    more = len(rows) - 1 - len(body)
    if more > 0:
        lines.append(f"\n({more} more rows not read)")
    return Document(source=source, title=title_from_name(path), text="\n".join(lines), format="csv")


_SPECIAL = [(stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
            (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")]


def read_regular_file(path: Path, max_bytes: int | None = None) -> bytes:
    """The bytes of a regular file of at most `max_bytes`. FIFOs and devices are refused before
    they are opened (reading one blocks forever or never ends), big files before they are read."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise LoadError(f"unreadable ({exc.strerror or type(exc).__name__})") from exc
    if not stat.S_ISREG(info.st_mode):
        kind = next((name for test, name in _SPECIAL if test(info.st_mode)), "not a regular file")
        raise LoadError(f"not a regular file ({kind})")
    if max_bytes is not None and info.st_size > max_bytes:
        raise LoadError(f"{info.st_size / 1e6:.1f} MB is over the {max_bytes / 1e6:g} MB limit (ASKDESK_MAX_FILE_MB)")
    try:
        with open(path, "rb") as handle:
            data = handle.read(max_bytes + 1) if max_bytes is not None else handle.read()
    except OSError as exc:
        raise LoadError(f"unreadable ({exc.strerror or type(exc).__name__})") from exc
    if max_bytes is not None and len(data) > max_bytes:  # grew after the stat
        raise LoadError(f"over the {max_bytes / 1e6:g} MB limit (ASKDESK_MAX_FILE_MB)")
    return data


def load_document(path: Path, source: str | None = None, *, max_bytes: int | None = None) -> Document:
    """Read one file into a Document, or raise LoadError saying why it cannot be used."""
    return load_bytes(path.name, read_regular_file(path, max_bytes), source)


def load_bytes(name: str, data: bytes, source: str | None = None) -> Document:
    """A file's bytes (its type told by `name`'s suffix, or a PDF's or Office package's own
    content when the suffix says nothing known) into a Document, or LoadError saying why it
    cannot be used."""
    path = Path(name)
    source = source or path.name
    suffix = path.suffix.lower()
    if not data.strip():
        raise LoadError("empty file")
    if suffix not in _KNOWN_SUFFIXES and data[:4] == b"PK\x03\x04":
        from agent.knowledge import office

        sniffed = office.sniff(data)  # a synced file named "Budget" that is really a workbook
        if sniffed:
            path, suffix = Path((path.name or "document") + sniffed), sniffed
    if suffix in PDF_SUFFIXES or data[:5] == b"%PDF-":
        doc = _load_pdf(path, source, data)
    elif suffix in OFFICE_SUFFIXES:
        from agent.knowledge import office

        doc = office.load_office(path, source, data)
    elif suffix in HTML_SUFFIXES:
        doc = _load_html(path, source, data)
    elif suffix in CSV_SUFFIXES:
        doc = _load_csv(path, source, data)
    else:
        from agent.knowledge import office

        reason = office.old_office_reason(data)
        if reason:
            raise LoadError(reason)
        doc = _load_markdown(path, source, data)
    if not doc.text.strip():
        raise LoadError("no text content")
    return doc
