"""Incremental, idempotent ingestion of files into a knowledge collection.

Each file's points carry `file_hash` (its text, title, url, chunker settings and version) and
`n_chunks`. A file whose points all have the current hash, and are all there, is skipped.
Otherwise its new chunks are upserted first (deterministic ids, so an unchanged chunk is simply
overwritten) and only then are points with another hash deleted. Interrupting at any moment
leaves either the old version, or old and new side by side (which the next run detects and
repairs); search never sees a file with no chunks because of an update.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qdrant_client import models

from agent.knowledge.chunking import CHUNKER_VERSION, Chunk, chunk_document
from agent.knowledge.embed_cache import embed_with_cache, open_cache, text_hash
from agent.knowledge.language import detect_language
from agent.knowledge.loaders import SUPPORTED_SUFFIXES, Document, LoadError, load_document
from agent.knowledge.sparse import SPARSE_VERSION, bm25_document, file_name_words
from agent.knowledge.store import (
    DENSE,
    SPARSE,
    StoreError,
    delete_file_points,
    ensure_collection,
    file_states,
    point_id,
)

if TYPE_CHECKING:
    from agent.runtime import Runtime

UPSERT_BATCH = 64


class IngestProgress:
    """Progress hooks (the CLI draws rich bars with them); the default does nothing."""

    def files_found(self, total: int) -> None: ...

    def chunks_found(self, total: int) -> None: ...

    def file_done(self, source: str) -> None: ...

    def chunks_done(self, n: int) -> None: ...


@dataclass
class IngestReport:
    collection: str
    files: int = 0  # files ingested: updated + unchanged (skipped ones are not counted here)
    updated: list[str] = field(default_factory=list)  # new or changed files written
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (file, reason)
    pruned: list[str] = field(default_factory=list)
    chunks: int = 0  # chunks of all readable files
    chunks_written: int = 0
    embedded: int = 0  # chunks actually sent to the embedder (cache misses)
    seconds: float = 0.0

    def summary(self) -> str:
        parts = [
            f"{self.files} files",
            f"{self.chunks} chunks",
            f"{len(self.updated)} updated",
            f"{len(self.unchanged)} unchanged",
        ]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        if self.pruned:
            parts.append(f"{len(self.pruned)} pruned")
        return f"Ingested into {self.collection!r}: " + ", ".join(parts) + f" in {self.seconds:.1f} s"

    def to_json(self) -> dict[str, Any]:
        return {
            "collection": self.collection,
            "files": self.files,
            "chunks": self.chunks,
            "chunks_written": self.chunks_written,
            "embedded": self.embedded,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "skipped": [{"file": f, "reason": r} for f, r in self.skipped],
            "pruned": self.pruned,
            "seconds": round(self.seconds, 2),
        }


def discover(paths: Iterable[Path]) -> tuple[list[tuple[Path, str]], list[tuple[str, str]]]:
    """(file, source name) pairs under `paths`, plus (path, reason) for paths that are unusable.

    A directory contributes its supported files (recursively, hidden entries skipped) named
    relative to it; a file given directly is named by its file name.
    """
    found: list[tuple[Path, str]] = []
    problems: list[tuple[str, str]] = []
    seen: dict[str, Path] = {}

    def add(path: Path, source: str) -> None:
        if source in seen and seen[source].resolve() != path.resolve():
            problems.append((str(path), f"same name as {seen[source]}; rename one of them"))
            return
        if source not in seen:
            seen[source] = path
            found.append((path, source))

    for root in paths:
        root = Path(root)
        if root.is_dir():
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                for name in sorted(filenames):
                    if name.startswith("."):
                        continue
                    path = Path(dirpath) / name
                    if path.suffix.lower() in SUPPORTED_SUFFIXES:
                        add(path, path.relative_to(root).as_posix())
        elif root.exists():
            add(root, root.name)
        else:
            problems.append((str(root), "no such file or directory"))
    return found, problems


def file_hash(doc: Document, chunk_chars: int, overlap: int, embedder: str) -> str:
    key = json.dumps(
        [doc.title, doc.url, chunk_chars, overlap, CHUNKER_VERSION, SPARSE_VERSION, embedder, text_hash(doc.text)],
        ensure_ascii=False,
    )
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _is_current(state: dict[str, Any] | None, fhash: str, n_chunks: int) -> bool:
    if not state:
        return False
    hashes = state["hashes"]
    return set(hashes) == {fhash} and hashes[fhash] == n_chunks and state["n_chunks"].get(fhash) == n_chunks


def build_points(doc: Document, chunks: list[Chunk], vectors: list[list[float]], fhash: str, lang: str,
                 n_chunks: int) -> list[models.PointStruct]:
    """Points of `chunks` (one write batch of a file that has `n_chunks` chunks in all)."""
    points = []
    for chunk, vector in zip(chunks, vectors):
        embed_text = chunk.embed_text(doc.title)
        content_hash = text_hash(embed_text)
        payload = {
            "source": doc.source,
            "title": doc.title,
            "section": chunk.section,
            "chunk_index": chunk.chunk_index,
            "lang": lang,
            "content_hash": content_hash,
            "file_hash": fhash,
            "n_chunks": n_chunks,
            "format": doc.format,
            "text": chunk.text,
        }
        if doc.url:
            payload["url"] = doc.url
        points.append(
            models.PointStruct(
                id=point_id(doc.source, chunk.chunk_index, content_hash),
                vector={DENSE: vector, SPARSE: bm25_document(f"{embed_text}\n{file_name_words(doc.source)}", lang)},
                payload=payload,
            )
        )
    return points


async def ingest(
    runtime: "Runtime",
    paths: Iterable[Path],
    *,
    collection: str | None = None,
    prune: bool = False,
    progress: IngestProgress | None = None,
) -> IngestReport:
    """Bring `collection` in line with the files under `paths` (see the module docstring).

    With `prune`, chunks of files that are not under `paths` any more are deleted: pass every
    path the collection is built from.
    """
    started = time.perf_counter()
    settings = runtime.settings
    name = settings.collection if collection is None else collection
    if not name.strip():
        raise StoreError("the collection name is empty: give --collection NAME or leave it out for "
                         f"the default ({settings.collection!r})")
    progress = progress or IngestProgress()
    report = IngestReport(collection=name)
    embedder = runtime.embedder()  # fails early (EmbedderError) when e.g. an API key is missing

    files, problems = discover(paths)
    report.skipped.extend(problems)
    progress.files_found(len(files))
    max_bytes = int(settings.max_file_mb * 1_000_000)
    planned: list[tuple[Document, list[Chunk]]] = []
    for path, source in files:
        try:
            doc = load_document(path, source, max_bytes=max_bytes)
        except LoadError as exc:
            report.skipped.append((source, str(exc)))
            progress.file_done(source)
            continue
        chunks = chunk_document(doc.text, title=doc.title, chunk_chars=settings.chunk_chars,
                                overlap=settings.chunk_overlap)
        if not chunks:
            report.skipped.append((source, "no text content"))
            progress.file_done(source)
            continue
        planned.append((doc, chunks))
    report.files = len(planned)
    report.chunks = sum(len(chunks) for _, chunks in planned)
    if not planned and not prune:  # nothing to write: do not create an empty collection
        report.seconds = time.perf_counter() - started
        return report

    await ensure_collection(runtime, name, embedder=embedder)
    states = await file_states(runtime, name)
    work = []
    for doc, chunks in planned:
        fhash = file_hash(doc, settings.chunk_chars, settings.chunk_overlap, embedder.name)
        if _is_current(states.get(doc.source), fhash, len(chunks)):
            report.unchanged.append(doc.source)
            progress.file_done(doc.source)
        else:
            work.append((doc, chunks, fhash))
    progress.chunks_found(sum(len(chunks) for _, chunks, _ in work))

    cache = open_cache(settings)
    try:
        for doc, chunks, fhash in work:
            lang = detect_language(doc.text)
            for start in range(0, len(chunks), UPSERT_BATCH):
                batch = chunks[start : start + UPSERT_BATCH]
                texts = [c.embed_text(doc.title) for c in batch]
                before = cache.get_many(embedder.name, [text_hash(t) for t in texts]) if cache else {}
                vectors = await embed_with_cache(embedder, texts, cache)
                report.embedded += len(texts) - len(before)
                points = build_points(doc, batch, vectors, fhash, lang, len(chunks))
                await runtime.store.upsert(name, points)
                report.chunks_written += len(points)
                progress.chunks_done(len(points))
            await delete_file_points(runtime, name, doc.source, keep_hash=fhash)
            report.updated.append(doc.source)
            progress.file_done(doc.source)
    finally:
        if cache:
            cache.close()

    if prune:
        present = {source for _, source in files}
        for source in sorted(set(states) - present):
            await delete_file_points(runtime, name, source)
            report.pruned.append(source)
    if report.chunks_written:
        await runtime.store.optimize(name)  # index the new points now (Edge), not at query time
    if report.updated or report.pruned:
        from agent.knowledge.vocabulary import forget_vocabulary

        forget_vocabulary(runtime, name)  # the off-topic check re-reads the documents' words
    report.seconds = time.perf_counter() - started
    return report
