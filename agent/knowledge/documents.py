"""What every loader returns and raises, and the Office suffixes: shared by the loaders
(agent/knowledge/loaders.py) and the Office readers (agent/knowledge/office.py), which the
loaders import only when an Office file is read."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

WORD_SUFFIXES = {".docx"}
POWERPOINT_SUFFIXES = {".pptx"}
EXCEL_SUFFIXES = {".xlsx", ".xlsm"}
OFFICE_SUFFIXES = WORD_SUFFIXES | POWERPOINT_SUFFIXES | EXCEL_SUFFIXES


class LoadError(Exception):
    """The file is unreadable, empty, binary or of an unsupported type."""


@dataclass
class Document:
    source: str  # stable name used in citations and as the file's key in the store
    title: str
    text: str  # Markdown-flavoured
    format: str  # "markdown" | "text" | "html" | "pdf" | "csv" | "docx" | "pptx" | "xlsx"
    url: str | None = None
    # who may see it (agent/audience.py), from a Markdown file's front matter (`audience: [C0HR]`);
    # None: everyone
    audience: list[str] | None = None


def title_from_name(path: Path) -> str:
    return re.sub(r"[-_]+", " ", path.stem).strip().capitalize() or path.name
