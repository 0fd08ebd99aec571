"""The sync engine: brings the knowledge base in line with each declared source.

A source lists what it holds or what changed (`Source.changes`); the engine decides what to
read: a document whose version it already wrote is skipped (nothing read, nothing embedded),
a new or changed one is read and written with the same per-document atomic swap as
`askdesk ingest` (agent/knowledge/ingest.py: search sees each document wholly old or wholly
new), a removed one is deleted. Each document's new version is recorded in the sync state as
soon as it is in the index, and the source's cursor only after the whole listing is applied:
a sync killed at any moment resumes where it stopped and never shows two versions.

Every chunk carries `origin` (the source's name) and `audience` (who may see it:
agent/audience.py). A source that cannot be listed (wrong credentials, unreachable) is
recorded with its error and skipped: the others go on, and its last good copy stays
searchable.
"""

from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.audience import EVERYONE, normal_audience
from agent.knowledge.ingest import SYNCED_PREFIX, ingest_documents
from agent.knowledge.loaders import Document, LoadError, load_bytes
from agent.sources.base import Fetched, Listed, Source, SourceError, heading_anchors
from agent.sources.config import config_fingerprint, load_sources
from agent.sources.state import SyncState

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.sources")

BATCH = 16  # documents written per ingest call (and per commit of the sync state)


class SyncProgress:
    """What a terminal shows while a source syncs; every hook does nothing by default."""

    def listed(self, source: str, to_read: int) -> None: ...
    def done(self, source: str, n: int = 1) -> None: ...


@dataclass
class SyncReport:
    source: str
    kind: str
    complete: bool = False  # the listing was everything the source holds
    listed: int = 0
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    removed: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)  # (title or ref, reason)
    embedded: int = 0  # chunks sent to the embedder
    seconds: float = 0.0
    error: str | None = None  # the source could not be synced at all
    revisits: int = 0  # answers that cited a changed or removed document, listed (agent/revisit.py)
    regressions: dict[str, Any] | None = None  # the regression cases checked after a change

    def summary(self) -> str:
        if self.error:
            return f"{self.source}: not synced: {self.error}"
        parts = [f"{len(self.added)} added", f"{len(self.changed)} changed", f"{self.unchanged} unchanged",
                 f"{len(self.removed)} removed"]
        if self.failed:
            parts.append(f"{len(self.failed)} unreadable")
        if self.revisits:
            parts.append(f"{self.revisits} answers to revisit")
        if self.regressions and self.regressions["lost"]:
            parts.append(f"{len(self.regressions['lost'])} regression cases lost their source")
        return f"{self.source} ({self.kind}): " + ", ".join(parts) + f" in {self.seconds:.1f} s"

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "complete": self.complete, "listed": self.listed,
                "added": self.added, "changed": self.changed, "unchanged": self.unchanged, "removed": self.removed,
                "failed": [{"document": d, "reason": r} for d, r in self.failed], "embedded": self.embedded,
                "seconds": round(self.seconds, 2), "error": self.error, "revisits": self.revisits,
                "regressions": self.regressions}


def document_key(source: str, ref: str) -> str:
    return f"{SYNCED_PREFIX}{source}/{ref}"


def audience_of(source: Source, fetched: Fetched) -> list[str]:
    """Who may see a document: the source's list, everyone, or what the service says."""
    audience = source.config.audience
    if audience == "everyone":
        return [EVERYONE]
    return normal_audience(fetched.audience or [] if audience == "from_source" else list(audience))


def to_document(source: Source, item: Listed, fetched: Fetched) -> Document:
    key = document_key(source.name, item.ref)
    title = fetched.title or item.title
    url = fetched.url or item.url
    if fetched.text is not None:
        if not fetched.text.strip():
            raise LoadError("no text content")
        return Document(source=key, title=title or item.ref, text=fetched.text, format="markdown", url=url)
    filename = fetched.filename or title or item.ref
    doc = load_bytes(filename, fetched.data or b"", source=key)
    own = re.search(rf"^#\s+{re.escape(doc.title)}\s*$", doc.text, re.MULTILINE) if doc.title else None
    if not own:  # a title the document states (its first heading) wins over the name the source lists
        doc.title = title or doc.title
    doc.url = url
    return doc


async def sync_source(runtime: "Runtime", source: Source, state: SyncState, *, full: bool = False,
                      progress: SyncProgress | None = None, batch: int | None = None) -> SyncReport:
    """One source brought in line with the index (see the module docstring)."""
    started = time.perf_counter()
    batch = batch or BATCH
    progress = progress or SyncProgress()
    report = SyncReport(source.name, source.kind)
    row, reconfigured = state.start(source.name, source.kind, config_fingerprint(source.config))
    full = full or reconfigured
    known = state.documents(source.name)
    try:
        listing = await source.changes(None if full else row.cursor)
    except SourceError as exc:
        report.error = str(exc)
    except Exception as exc:  # a plug-in's bug is this source's error, not the whole sync's
        report.error = f"{type(exc).__name__}: {exc}"
    if report.error:
        state.error(source.name, report.error)
        log.warning("source %s: %s", source.name, report.error)
        report.seconds = time.perf_counter() - started
        return report

    report.complete, report.listed = listing.complete, len(listing.documents)
    listed_refs = {item.ref for item in listing.documents}
    to_read: list[Listed] = []
    gone: list[str] = []
    for item in listing.documents:
        old = known.get(item.ref)
        if item.deleted:
            if old is not None:
                gone.append(item.ref)
        elif old is None or old.error is not None or old.version != item.version or full or \
                (old.listed.title, old.listed.url, old.listed.path) != (item.title, item.url, item.path):
            to_read.append(item)  # new, changed, renamed or moved (a rename can keep the version)
        else:
            report.unchanged += 1
    if listing.complete:
        gone += [ref for ref in known if ref not in listed_refs]
    # documents a previous run could not read: the feed will not name them again
    to_read += [row.listed for ref, row in known.items() if row.error is not None and ref not in listed_refs
                and not listing.complete]
    progress.listed(source.name, len(to_read) + len(gone))

    collection = None  # the deployment's knowledge collection
    for start in range(0, len(to_read), batch):
        items = to_read[start:start + batch]
        docs: list[tuple[Document, dict[str, Any]]] = []
        readable: list[tuple[Listed, Document]] = []
        for item in items:
            key = document_key(source.name, item.ref)
            try:
                fetched = await source.read(item)
                doc = to_document(source, item, fetched)
            except (SourceError, LoadError) as exc:
                state.failed(source.name, item, key, str(exc))
                report.failed.append((item.title or item.ref, str(exc)))
                continue
            extra = {"origin": source.name, "audience": audience_of(source, fetched),
                     "filename": fetched.filename or item.title}
            anchors = fetched.anchors or heading_anchors(fetched)
            if anchors:
                extra["anchors"] = anchors
            docs.append((doc, extra))
            readable.append((item, doc))
        if docs:
            written = await ingest_documents(runtime, docs, collection=collection, calibration_wanted=False)
            report.embedded += written.embedded
            report.revisits += written.revisits
            skipped = dict(written.skipped)
            for item, doc in readable:
                if doc.source in skipped:
                    state.failed(source.name, item, doc.source, skipped[doc.source])
                    report.failed.append((item.title or item.ref, skipped[doc.source]))
                    continue
                (report.changed if item.ref in known and known[item.ref].error is None else report.added).append(
                    doc.title)
                state.written(source.name, item, doc.source, doc.title, doc.url)
        progress.done(source.name, len(items))
    if gone:
        keys = [known[ref].key for ref in gone if ref in known]
        removal = await ingest_documents(runtime, [], collection=collection, remove=keys, calibration_wanted=False)
        report.revisits += removal.revisits
        report.removed = [known[ref].title or ref for ref in gone if ref in known]
        state.removed(source.name, gone)
        progress.done(source.name, len(gone))
    if report.added or report.changed or report.removed:
        await _recalibrate(runtime)
        report.regressions = await _regressions(runtime)
    state.finished(source.name, listing.cursor, report.to_json())
    report.seconds = time.perf_counter() - started
    return report


async def forget_source(runtime: "Runtime", name: str, state: SyncState) -> int:
    """Delete what a source no longer declared wrote; the number of documents removed."""
    keys = [row.key for row in state.documents(name).values()]
    if keys:
        await ingest_documents(runtime, [], remove=keys, calibration_wanted=False)
        await _recalibrate(runtime)
    state.forget(name)
    return len(keys)


async def _regressions(runtime: "Runtime") -> dict[str, Any] | None:
    """Which regression cases no longer find their source (agent/evaluation/regressions.py)."""
    if not (runtime.settings.data_dir / "regressions.yaml").is_file():  # no case yet: nothing to load
        return None
    from agent.evaluation.regressions import check, load_cases, summary

    cases = load_cases(runtime.settings)
    return summary(await check(runtime, cases)) if cases else None


async def _recalibrate(runtime: "Runtime") -> None:
    """The off-topic calibration follows the content (once per source sync, not per batch)."""
    from agent.knowledge import calibration

    name = runtime.settings.collection
    stale, version = await calibration.stored(runtime, name)
    if stale is None or stale.content_version != version:
        await calibration.refresh(runtime, name)


def open_state(runtime: "Runtime") -> SyncState:
    return SyncState(runtime.settings.data_dir / "sources.sqlite")


async def sync_all(runtime: "Runtime", names: list[str] | None = None, *, full: bool = False,
                   progress: SyncProgress | None = None, sources: list[Source] | None = None) -> list[SyncReport]:
    """Every declared source (or those `names`), one after another; a source that fails is
    reported and the next one runs. Syncing them all also removes what a source that is no
    longer declared had written."""
    sources = load_sources(runtime.settings) if sources is None else sources
    declared = {s.name for s in sources}
    unknown = [n for n in names or [] if n not in declared]
    if unknown:
        raise SourceError(f"no source named {', '.join(map(repr, unknown))} in sources.yaml "
                          f"(declared: {', '.join(sorted(declared)) or 'none'})")
    state = open_state(runtime)
    reports = []
    try:
        for source in sources:
            if names and source.name not in names:
                continue
            try:
                reports.append(await sync_source(runtime, source, state, full=full, progress=progress))
            finally:
                await source.close()
        if not names:
            for stale in [n for n in state.names() if n not in declared]:
                removed = await forget_source(runtime, stale, state)
                log.warning("source %s is no longer declared: its %d documents were removed", stale, removed)
    finally:
        state.close()
    return reports
