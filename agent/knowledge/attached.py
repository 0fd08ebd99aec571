"""Files attached to a question: judged by name and type before anyone downloads them, read
with the ingestion loaders, cut with the ingestion chunker, and the passages that best match
the question picked for the model. Nothing here writes to the knowledge base: an attached
file is context for its conversation only.

Picking is lexical (the BM25 terms of agent/knowledge/sparse.py, weighted by how rare a term
is among the file's chunks), not by embedding: a 20-page PDF's chunks would take the embedder
seconds on a small CPU, and the question is usually about words the file uses. A question that
shares no word with the file ("summarise this") gets the file from its start.
"""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path, PurePosixPath
from typing import Literal

from agent.knowledge.chunking import chunk_document
from agent.knowledge.loaders import CSV_SUFFIXES, SUPPORTED_SUFFIXES, Document, LoadError, load_bytes
from agent.knowledge.search import Passage
from agent.knowledge.sparse import tokens

Kind = Literal["readable", "image", "unsupported"]

READABLE_SUFFIXES = SUPPORTED_SUFFIXES | CSV_SUFFIXES
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".heic", ".heif", ".bmp", ".tif", ".tiff", ".svg"}
# a declared type stands in for a missing or unknown suffix ("report" with type application/pdf)
TYPE_SUFFIXES = {
    "application/pdf": ".pdf", "text/plain": ".txt", "text/markdown": ".md", "text/x-markdown": ".md",
    "text/csv": ".csv", "application/csv": ".csv", "text/tab-separated-values": ".tsv", "text/html": ".html",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "application/vnd.ms-excel.sheet.macroenabled.12": ".xlsm",
    # what Slack (`filetype`) and Teams (`fileType`) call them
    "pdf": ".pdf", "text": ".txt", "txt": ".txt", "markdown": ".md", "md": ".md", "csv": ".csv", "tsv": ".tsv",
    "html": ".html", "post": ".md", "docx": ".docx", "pptx": ".pptx", "xlsx": ".xlsx", "xlsm": ".xlsm",
}
MAX_TEXT_CHARS = 400_000  # of one file's text considered (about 150 pages); the rest is cut, and said so


def readable_name(name: str, mimetype: str = "") -> str:
    """`name`, with the suffix its declared type implies when its own says nothing readable."""
    base = PurePosixPath(name.replace("\\", "/")).name or "attachment"
    if Path(base).suffix.lower() in READABLE_SUFFIXES:
        return base
    suffix = TYPE_SUFFIXES.get((mimetype or "").split(";")[0].strip().lower())
    return base + suffix if suffix else base


def kind(name: str, mimetype: str = "") -> Kind:
    """Whether askdesk can read a file, told by its name and declared type alone."""
    mime = (mimetype or "").lower()
    suffix = Path(name).suffix.lower()
    if Path(readable_name(name, mimetype)).suffix.lower() in READABLE_SUFFIXES:
        return "readable"
    if mime.startswith("image/") or suffix in IMAGE_SUFFIXES or mime in {"png", "jpg", "jpeg", "gif", "heic"}:
        return "image"
    return "unsupported"


def read(name: str, mimetype: str, data: bytes) -> Document:
    """The file's text (LoadError: why it cannot be read), cut at MAX_TEXT_CHARS with a line saying so."""
    doc = load_bytes(readable_name(name, mimetype), data, source=PurePosixPath(name).name or "attachment")
    if len(doc.text) > MAX_TEXT_CHARS:
        rest = len(doc.text) - MAX_TEXT_CHARS
        doc.text = doc.text[:MAX_TEXT_CHARS] + f"\n\n[the remaining {rest:,} characters of this file were not read]"
    return doc


def passages(documents: list[Document], question: str, *, budget: int, chunk_chars: int,
             overlap: int) -> list[Passage]:
    """The chunks of `documents` that best match `question`, within `budget` characters, in
    the files' own order. Files that fit the budget whole are given whole."""
    chunks = [(doc, chunk) for doc in documents
              for chunk in chunk_document(doc.text, title=doc.title, chunk_chars=chunk_chars, overlap=overlap)]
    if not chunks:
        return []
    wanted = set(tokens(question))
    counts = [Counter(tokens(chunk.text)) for _, chunk in chunks] if wanted else [Counter() for _ in chunks]
    df = Counter(term for terms in counts for term in wanted if term in terms)
    n = len(chunks)

    def score(terms: Counter) -> float:
        return sum(math.log(1 + n / df[t]) * terms[t] / (terms[t] + 1.2) for t in wanted if t in terms)

    scores = [score(terms) for terms in counts]
    order = sorted(range(n), key=lambda i: (-scores[i], i))  # best first; ties: earlier in the file
    chosen: list[int] = []
    used = 0
    for i in order:
        size = len(chunks[i][1].text) + 2
        if used + size > budget and chosen:
            continue
        chosen.append(i)
        used += size
    return [Passage(text=chunks[i][1].text if len(chunks[i][1].text) <= budget else chunks[i][1].text[:budget] + "…",
                    source=chunks[i][0].source, title=chunks[i][0].source, section=chunks[i][1].section,
                    score=round(scores[i], 3), chunk_index=chunks[i][1].chunk_index)
            for i in sorted(chosen)]


__all__ = ["Document", "LoadError", "kind", "passages", "read", "readable_name"]
