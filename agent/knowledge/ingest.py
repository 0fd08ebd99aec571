"""Incremental, idempotent ingestion of files into a knowledge collection; atomic per file.

Each file's points carry `file_hash` (its text, title, url, chunker settings and version),
`n_chunks` and `version` (a fresh id per write). A file whose visible points all have the
current hash, and are all there, is skipped. Otherwise a new version is written hidden and then
swapped in for the old one in one step (agent/knowledge/versions.py): search sees each file
wholly old or wholly new, never both and never part, even when the process is killed at any
moment; the next ingest deletes what a killed one left hidden.
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

import agent.store.models as models
from agent.audience import normal_audience
from agent.knowledge import calibration, statistics, statistics_log
from agent.knowledge.chunking import CHUNKER_VERSION, Chunk, chunk_document
from agent.knowledge import versions
from agent.knowledge.embed_cache import embed_with_cache, open_cache, text_hash
from agent.knowledge.language import detect_language
from agent.knowledge.loaders import SUPPORTED_SUFFIXES, Document, LoadError, load_document
from agent.knowledge.sparse import SPARSE_VERSION, bm25_document, file_name_words
from agent.knowledge.store import (
    DENSE,
    SPARSE,
    FileVersion,
    StoreError,
    collection_metadata,
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
    calibration: dict[str, Any] | None = None  # the off-topic calibration, when it was recomputed
    languages: dict[str, int] = field(default_factory=dict)  # language -> chunks of the collection (agent/knowledge/kb_languages.py)
    languages_note: str | None = None  # documents' languages askdesk has no translations for (said, not an error)
    revisits: int = 0  # answers that cited a replaced or removed document, now listed (agent/revisit.py)

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
            "calibration": self.calibration,
            "languages": self.languages,
            "languages_note": self.languages_note,
            "revisits": self.revisits,
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


def file_hash(doc: Document, chunk_chars: int, overlap: int, embedder: str, extra: dict[str, Any] | None = None) -> str:
    parts: list[Any] = [doc.title, doc.url, chunk_chars, overlap, CHUNKER_VERSION, SPARSE_VERSION, embedder,
                        text_hash(doc.text)]
    if extra:  # a synced document's origin and audience: a changed audience rewrites its chunks
        parts.append(extra)
    key = json.dumps(parts, ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]


def _is_current(state: list[FileVersion] | None, fhash: str, n_chunks: int) -> bool:
    if not state or len(state) != 1:
        return False
    only = state[0]
    return only.file_hash == fhash and only.points == n_chunks and only.n_chunks == n_chunks


async def _versions_of(runtime: "Runtime", name: str, source: str, state: list[FileVersion] | None) -> list[str]:
    """The version ids of a file's visible chunks (chunks from before versions get theirs now)."""
    found = []
    for item in state or []:
        found.append(item.version or await versions.adopt_legacy(runtime, name, source, item.file_hash))
    return found


async def _delete(runtime: "Runtime", name: str, source: str, old: list[str]) -> list[str]:
    if old:
        await runtime.store.delete_where(name, versions.selector(source, old))
    return old


async def _uncount(runtime: "Runtime", name: str, stats: "statistics.Statistics | None", source: str,
                   old: list[str]) -> None:
    """Take a file's replaced chunks out of the statistics (reads that file's chunks only)."""
    if stats is not None and old:
        for payload, terms in await statistics.chunks_of(runtime, name, versions.selector(source, old)):
            stats.count(payload, terms, -1)


# documents written by a source's sync (agent/sources/sync.py) are keyed "@<source>/<ref>";
# `ingest --prune` of a folder never touches them
SYNCED_PREFIX = "@"


def build_points(doc: Document, chunks: list[Chunk], vectors: list[list[float]], fhash: str, lang: str,
                 n_chunks: int, version: str, extra: dict[str, Any] | None = None) -> list[models.PointStruct]:
    """Points of `chunks` (one write batch of version `version` of a file that has `n_chunks`
    chunks in all). `extra`: payload every chunk of the document carries (`origin`, `audience`,
    `filename` of a synced document)."""
    extra = dict(extra or {})
    anchors: dict[str, str] = extra.pop("anchors", None) or {}  # heading -> the page's fragment id
    name_words = file_name_words(extra.get("filename") or doc.source)
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
            versions.VERSION: version,
            "format": doc.format,
            "text": chunk.text,
        }
        if doc.url:
            heading = chunk.section.rsplit(" > ", 1)[-1] if chunk.section else ""
            payload["url"] = f"{doc.url.split('#', 1)[0]}#{anchors[heading]}" if heading in anchors else doc.url
        payload.update(extra)
        points.append(
            models.PointStruct(
                id=point_id(doc.source, chunk.chunk_index, content_hash, version),
                vector={DENSE: vector, SPARSE: bm25_document(f"{embed_text}\n{name_words}", lang)},
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
    calibration_wanted: bool = True,
    remove: Iterable[str] = (),
    revisit: bool = True,
) -> IngestReport:
    """Bring `collection` in line with the files under `paths` (see the module docstring).

    With `prune`, chunks of files that are not under `paths` any more are deleted: pass every
    path the collection is built from. When the collection changed (or was never calibrated),
    the off-topic calibration is recomputed (agent/knowledge/calibration.py). `remove`: sources
    to delete as a prune would (a learned answer taken out of the knowledge base). `revisit`:
    answers that cited a replaced or removed document are listed to revisit (agent/revisit.py);
    False when the text did not change (a learned answer past its review date is only withheld).
    """
    started = time.perf_counter()
    settings = runtime.settings
    name = settings.collection if collection is None else collection
    if not name.strip():
        raise StoreError("the collection name is empty: give --collection NAME or leave it out for "
                         f"the default ({settings.collection!r})")
    progress = progress or IngestProgress()
    report = IngestReport(collection=name)
    runtime.embedder()  # fails early (EmbedderError) when e.g. an API key is missing

    files, problems = discover(paths)
    report.skipped.extend(problems)
    progress.files_found(len(files))
    max_bytes = int(settings.max_file_mb * 1_000_000)
    planned: list[tuple[Document, list[Chunk], dict[str, Any]]] = []
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
        # a Markdown file's front matter may limit who sees it (a learned answer from a channel)
        planned.append((doc, chunks, {"audience": normal_audience(doc.audience)} if doc.audience else {}))
    present = {source for _, source in files} if prune else None
    return await _write(runtime, name, planned, report, progress, present=present, dropped=set(remove),
                        calibration_wanted=calibration_wanted, started=started, revisit=revisit)


async def ingest_documents(
    runtime: "Runtime",
    documents: Iterable[tuple[Document, dict[str, Any]]],
    *,
    collection: str | None = None,
    remove: Iterable[str] = (),
    progress: IngestProgress | None = None,
    calibration_wanted: bool = True,
) -> IngestReport:
    """Write documents that came from a source (each with the payload all its chunks carry) and
    delete the `remove`d keys, with the same per-document atomic swap as `ingest`."""
    started = time.perf_counter()
    settings = runtime.settings
    name = settings.collection if collection is None else collection
    progress = progress or IngestProgress()
    report = IngestReport(collection=name)
    runtime.embedder()
    documents = list(documents)
    progress.files_found(len(documents))
    planned: list[tuple[Document, list[Chunk], dict[str, Any]]] = []
    for doc, extra in documents:
        chunks = chunk_document(doc.text, title=doc.title, chunk_chars=settings.chunk_chars,
                                overlap=settings.chunk_overlap)
        if not chunks:
            report.skipped.append((doc.source, "no text content"))
            progress.file_done(doc.source)
            continue
        planned.append((doc, chunks, extra))
    return await _write(runtime, name, planned, report, progress, present=None, dropped=set(remove),
                        calibration_wanted=calibration_wanted, started=started)


async def _write(runtime: "Runtime", name: str, planned: list[tuple[Document, list[Chunk], dict[str, Any]]],
                 report: IngestReport, progress: IngestProgress, *, present: set[str] | None, dropped: set[str],
                 calibration_wanted: bool, started: float, revisit: bool = True) -> IngestReport:
    """Bring the collection in line with `planned` (see `ingest`); `present`: prune every other
    file (synced documents excepted)."""
    settings = runtime.settings
    embedder = runtime.embedder()
    prune = present is not None
    report.files = len(planned)
    report.chunks = sum(len(chunks) for _, chunks, _ in planned)
    if not planned and not prune and not dropped:  # nothing to write: do not create an empty collection
        report.seconds = time.perf_counter() - started
        return report

    await ensure_collection(runtime, name, embedder=embedder)
    await versions.recover(runtime, name, await collection_metadata(runtime, name))
    metadata = await collection_metadata(runtime, name)
    states = await file_states(runtime, name, metadata)
    # what this ingest changes in the statistics (None: they do not describe the collection as it
    # is, and are rebuilt by a scan at the end)
    started_from = (metadata or {}).get(calibration.CONTENT_KEY)
    saved = statistics.open_saved(runtime, name) if states else None
    if states and (saved is None or saved.content_version != started_from) and \
            await statistics_log.catch_up(runtime, name, started_from):  # another host's ingest
        saved = statistics.open_saved(runtime, name)
    stats: statistics.Statistics | None = statistics.Statistics()
    if states and (saved is None or saved.content_version != started_from):
        stats = None
    work = []
    for doc, chunks, extra in planned:
        fhash = file_hash(doc, settings.chunk_chars, settings.chunk_overlap, embedder.name, extra)
        if _is_current(states.get(doc.source), fhash, len(chunks)):
            report.unchanged.append(doc.source)
            progress.file_done(doc.source)
        else:
            work.append((doc, chunks, fhash, extra))
    progress.chunks_found(sum(len(chunks) for _, chunks, _, _ in work))

    deleted: list[str] = []  # superseded versions already deleted: their keys go with the next write
    replaced: list[str] = []  # documents that had a version before this one
    cache = open_cache(settings)
    try:
        for doc, chunks, fhash, extra in work:
            old = await _versions_of(runtime, name, doc.source, states.get(doc.source))
            await _uncount(runtime, name, stats, doc.source, old)
            version = versions.new_version()
            await versions.hide_pending(runtime, name, doc.source, version, deleted)
            deleted = []
            lang = detect_language(doc.text)
            written: list[models.PointStruct] = []
            for start in range(0, len(chunks), UPSERT_BATCH):
                batch = chunks[start : start + UPSERT_BATCH]
                texts = [c.embed_text(doc.title) for c in batch]
                before = cache.get_many(embedder.name, [text_hash(t) for t in texts]) if cache else {}
                vectors = await embed_with_cache(embedder, texts, cache)
                report.embedded += len(texts) - len(before)
                points = build_points(doc, batch, vectors, fhash, lang, len(chunks), version, extra)
                await runtime.store.upsert(name, points)
                written += points
                report.chunks_written += len(points)
                progress.chunks_done(len(points))
            await versions.switch(runtime, name, doc.source, version, old)
            deleted = await _delete(runtime, name, doc.source, old)
            if old:
                replaced.append(doc.source)
            if stats is not None:  # the terms of the BM25 vectors just written: no tokenising again
                for point in written:
                    stats.count(point.payload or {}, point.vector[SPARSE].indices)  # type: ignore[index]
            report.updated.append(doc.source)
            progress.file_done(doc.source)
    finally:
        if cache:
            cache.close()

    if prune or dropped:
        unlisted = {s for s in states if s not in (present or ()) and not s.startswith(SYNCED_PREFIX)}
        gone = (unlisted if prune else set()) | (dropped & set(states))
        for source in sorted(gone):
            old = await _versions_of(runtime, name, source, states[source])
            await _uncount(runtime, name, stats, source, old)
            await versions.switch(runtime, name, source, None, old)
            deleted += await _delete(runtime, name, source, old)
            report.pruned.append(source)
    await versions.forget(runtime, name, deleted)
    if report.chunks_written:
        await runtime.store.optimize(name)  # index the new points now (Edge), not at query time
    if report.updated or report.pruned:
        version = versions.new_version()
        if stats is not None:  # other hosts read the change before they see the new version
            stats.content_version = version
            await statistics_log.publish(runtime, name, stats, started_from if states else None)
        await calibration.mark_changed(runtime, name, version)
        if stats is not None:
            if states:
                await statistics.apply(runtime, name, stats, expect=started_from)
            else:
                await statistics.save(runtime, name, stats)
            await statistics_log.compact(runtime, name)
    if stats is None or report.updated or report.pruned:
        from agent.knowledge.vocabulary import forget_vocabulary

        if stats is None:  # none yet (an older build's collection) or out of step: one scan, now
            await statistics_log.rebuild(runtime, name)
        forget_vocabulary(runtime, name)  # this process reads the new statistics
    if report.updated or report.pruned:
        from agent.knowledge import language_centers

        await language_centers.refresh(runtime, name)  # each language's mean vector, for cross-language search
    if revisit and (replaced or report.pruned):  # answers that cited them are to be revisited
        import asyncio

        from agent.revisit import documents_changed

        changes = {**{s: "removed" for s in report.pruned}, **{s: "changed" for s in replaced}}
        report.revisits = len(await asyncio.to_thread(documents_changed, settings, changes))  # type: ignore[arg-type]
    stale, version = await calibration.stored(runtime, name)
    if calibration_wanted and (stale is None or stale.content_version != version):
        # what "on topic" looks like for this collection, recomputed with its content
        report.calibration = (await calibration.refresh(runtime, name)).summary()
    from agent.knowledge import kb_languages

    report.languages = kb_languages.held(settings, name)
    report.languages_note = kb_languages.note(report.languages, kb_languages.spoken(settings))
    report.seconds = time.perf_counter() - started
    return report
