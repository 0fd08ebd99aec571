"""What a knowledge base says about itself, computed at ingest: which index terms its chunks
hold and in how many, the words of its titles and headings, its languages and its documents'
titles.

Nothing here runs inside a question's path in time proportional to the knowledge base. The
statistics live in one SQLite file beside the store (`<data dir>/statistics/`, 0600, WAL) stamped
with the collection's content version, and are looked up a term at a time: opening them costs the
same at 1,000 chunks and at 1,000,000, and a process swapping in newer ones does no Python work
proportional to their size (the JSON file they replaced had to be parsed whole, which held the
event loop for ~50 ms at 100k chunks and ~0.8 s at 1M). An ingest writes only what changed (a
new or replaced file adds its new chunks and takes away its old ones; a pruned file takes its
chunks away), in one transaction, so a reader sees the old statistics or the new ones.

A chunk's index terms are those of its BM25 vector (their 32-bit indices, `sparse.term_index`):
what the ingest just computed for the vector, and what a scan reads back with it — no chunk is
tokenised a second time (tokenising was ~0.4 ms a chunk: a quarter of an ingest whose vectors
were cached, and minutes of CPU for a scan of 1M chunks). Another host's ingest into a shared
Qdrant server reaches this host's file as the changes it published (statistics_log.py). A full
scan of the collection runs only to build statistics that neither exist here nor can be had
from that log (a collection ingested by an older build) — at ingest, at warm start, or in the
background, a millisecond at a time and never while a search runs (`Runtime.idle`), so
questions go first.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator

from agent import sidecar
from agent.knowledge import versions
from agent.knowledge.calibration import CONTENT_KEY
from agent.knowledge.sparse import term_index, tokens
from agent.knowledge.store import SPARSE
from agent.private import private_file

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

FORMAT = 3  # bumped when what the file holds changes: older files are rebuilt
KIND = "statistics"
PAYLOAD = ["title", "section", "lang"]  # what one chunk contributes besides its BM25 vector's terms
SCAN_PAGE = 8  # chunks read per store call while scanning: a question arriving during one waits for it
SLICE_SECONDS = 0.001  # the longest a scan counts before letting questions run
COUNTERS = ("df", "headings", "langs", "titles")
SCHEMA = "CREATE TABLE IF NOT EXISTS df(key INTEGER PRIMARY KEY, n INTEGER NOT NULL, seq INTEGER NOT NULL);" + \
    "".join(f"CREATE TABLE IF NOT EXISTS {t}(key TEXT PRIMARY KEY, n INTEGER NOT NULL, seq INTEGER NOT NULL)"
            " WITHOUT ROWID;" for t in COUNTERS[1:]) + \
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"

Chunk = tuple[dict[str, Any], Iterable[int]]  # (payload, its BM25 vector's term indices)


@lru_cache(maxsize=8192)
def heading_terms(heading: str, lang: str | None) -> frozenset[str]:
    """The index terms of a title or a section heading (a document's chunks share its title, a
    section's chunks its heading: each is tokenised once)."""
    return frozenset(tokens(heading, lang))


@dataclass
class Statistics:
    """Counts in memory: a full build, or what one ingest changes (then counts may be negative)."""

    content_version: str | None = None  # the collection content these describe
    chunks: int = 0
    df: Counter = field(default_factory=Counter)  # BM25 term index -> chunks whose vector holds it
    headings: Counter = field(default_factory=Counter)  # term -> chunks whose title/section has it
    langs: Counter = field(default_factory=Counter)  # language -> chunks written in it
    titles: Counter = field(default_factory=Counter)  # document title -> chunks

    def count(self, payload: dict[str, Any], terms: Iterable[int], sign: int = 1) -> None:
        """Add (sign=1) or take away (sign=-1) one chunk: its payload fields and the term indices
        of its BM25 vector."""
        lang = payload.get("lang") or None
        title, section = str(payload.get("title") or ""), str(payload.get("section") or "")
        headings = heading_terms(title, lang) | heading_terms(section, lang)
        for counter, keys in ((self.df, set(terms)), (self.headings, headings),
                              (self.langs, [lang or "und"]), (self.titles, [title.strip()] if title.strip() else [])):
            if sign > 0:
                counter.update(keys)  # counted in C (a zero left by an ingest's changes is never written)
            else:
                counter.subtract(keys)
                for key in keys:
                    if counter[key] == 0:
                        del counter[key]
        self.chunks += sign


class Counts:
    """One counter of the saved statistics, read a key at a time (a Counter's `get`, `in` and
    `most_common`, ties in the order the keys first appeared); `df` is keyed by the term's
    BM25 index, and looked up by the term."""

    def __init__(self, db: sqlite3.Connection, table: str, key: Callable[[str], Any] | None = None) -> None:
        self._db, self._table, self._key = db, table, key

    def get(self, key: str, default: int = 0) -> int:
        rows = self._db.execute(f"SELECT n FROM {self._table} WHERE key = ?",
                                (self._key(key) if self._key else key,)).fetchall()
        return rows[0][0] if rows else default

    def __getitem__(self, key: str) -> int:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) > 0

    def most_common(self, n: int | None = None) -> list[tuple[Any, int]]:
        limit = -1 if n is None else n
        return list(self._db.execute(f"SELECT key, n FROM {self._table} ORDER BY n DESC, seq LIMIT ?", (limit,)))

    def counter(self) -> Counter:
        """All of it in memory (tests, comparisons): proportional to its size."""
        return Counter(dict(self.most_common()))


class Stored:
    """The saved statistics of one collection, open for reading."""

    def __init__(self, db: sqlite3.Connection) -> None:
        meta = dict(db.execute("SELECT key, value FROM meta"))
        if meta.get("format") != str(FORMAT):
            raise ValueError(f"statistics format {meta.get('format')!r}")
        self.content_version: str | None = meta.get("content_version") or None
        self.chunks = int(meta.get("chunks") or 0)
        self.df = Counts(db, "df", term_index)
        self.headings, self.titles = Counts(db, "headings"), Counts(db, "titles")
        self.langs = Counts(db, "langs").counter()  # a handful of languages

    def everything(self) -> Statistics:
        return Statistics(self.content_version, self.chunks, self.df.counter(), self.headings.counter(),
                          Counter(self.langs), self.titles.counter())


def path_of(runtime: "Runtime", collection: str) -> Path:
    return sidecar.path(runtime, collection, KIND, "sqlite3")


def open_saved(runtime: "Runtime", collection: str) -> Stored | None:
    """The saved statistics of `collection` (whatever content version they describe), or None."""
    path = path_of(runtime, collection)
    if not path.exists():
        return None
    try:
        return Stored(sqlite3.connect(path))
    except (sqlite3.Error, ValueError) as exc:
        log.warning("statistics of %s unreadable (%s): rebuilt", collection, exc)
        return None


def load(runtime: "Runtime", collection: str) -> Statistics | None:
    """All of the saved statistics in memory (tests and tools; questions use `open_saved`)."""
    saved = open_saved(runtime, collection)
    return saved.everything() if saved is not None else None


async def save(runtime: "Runtime", collection: str, stats: Statistics) -> None:
    """Replace the saved statistics with `stats`, in one transaction."""
    await asyncio.to_thread(write, path_of(runtime, collection), stats, True)


async def apply(runtime: "Runtime", collection: str, changes: Statistics, *, expect: str | None) -> bool:
    """Add what one ingest changed to the saved statistics and stamp them with
    `changes.content_version`, in one transaction — only if they describe `expect`, the content
    the changes start from (False, and nothing written, when they do not: another process of
    this host applied them first)."""
    return await asyncio.to_thread(write, path_of(runtime, collection), changes, False, expect)


def write(path: Path, stats: Statistics, replace: bool, expect: str | None = None) -> bool:
    """In a worker thread: SQLite releases the GIL as it works, so questions keep running."""
    db = sqlite3.connect(private_file(path), timeout=30)
    try:
        try:
            db.execute("PRAGMA journal_mode=WAL")  # readers never wait for this writer
        except sqlite3.DatabaseError:  # not a database (a damaged file): start a new one
            db.close()
            for damaged in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
                damaged.unlink(missing_ok=True)
            db = sqlite3.connect(private_file(path), timeout=30)
            db.execute("PRAGMA journal_mode=WAL")
        db.executescript(SCHEMA)
        with db:
            db.execute("BEGIN IMMEDIATE")
            chunks = stats.chunks
            if replace:
                for table in (*COUNTERS, "meta"):
                    db.execute(f"DELETE FROM {table}")
            else:
                meta = dict(db.execute("SELECT key, value FROM meta"))
                if (meta.get("content_version") or None) != expect:
                    return False
                chunks += int(meta.get("chunks") or 0)
            for table in COUNTERS:
                counter: Counter = getattr(stats, table)
                # only titles are ranked (`most_common`): the other tables' order is not read
                start = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM titles").fetchone()[0] if table == "titles" else 0
                db.executemany(f"INSERT INTO {table}(key, n, seq) VALUES (?, ?, ?) "
                               "ON CONFLICT(key) DO UPDATE SET n = n + excluded.n",
                               ((k, n, start + i if start else 0) for i, (k, n) in enumerate(counter.items()) if n))
                if not replace:
                    db.executemany(f"DELETE FROM {table} WHERE key = ? AND n <= 0",
                                   ((k,) for k, n in counter.items() if n < 0))
            db.executemany("INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                           [("format", str(FORMAT)), ("chunks", str(chunks)),
                            ("content_version", stats.content_version or "")])
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the file alone holds them: one file to copy
    finally:
        db.close()
    if replace:
        path.with_suffix(".json").unlink(missing_ok=True)  # what an older build saved
    return True


async def chunks_of(runtime: "Runtime", collection: str, flt, batch: int = 1024) -> list[Chunk]:
    """The chunks matching `flt`: their payloads (PAYLOAD fields) and BM25 terms."""
    return [chunk async for page in pages(runtime, collection, flt, batch) for chunk in page]


async def pages(runtime: "Runtime", collection: str, flt, batch: int) -> AsyncIterator[list[Chunk]]:
    offset = None
    while True:
        points, offset = await runtime.store.scroll(collection, scroll_filter=flt, limit=batch, offset=offset,
                                                    with_payload=PAYLOAD, with_vectors=[SPARSE])
        yield [(p.payload or {}, _terms(p.vector)) for p in points]
        if offset is None:
            return


def _terms(vector: Any) -> Iterable[int]:
    sparse = vector.get(SPARSE) if isinstance(vector, dict) else None
    return sparse.indices if sparse is not None else ()


async def build(runtime: "Runtime", collection: str) -> Statistics:
    """Statistics from a full scan of the collection's visible chunks (see the module docstring
    for when this runs), saved for the next process."""
    metadata = await runtime.store.collection_metadata(collection)
    stats = Statistics(content_version=(metadata or {}).get(CONTENT_KEY))
    if metadata is None:
        return stats
    async for page in pages(runtime, collection, versions.visible(None, metadata), SCAN_PAGE):
        counted = 0
        while counted < len(page):
            await runtime.idle()  # before every slice: a search that began meanwhile goes first
            began = time.perf_counter()
            while counted < len(page) and time.perf_counter() - began < SLICE_SECONDS:
                stats.count(*page[counted])
                counted += 1
        await runtime.idle()
    await save(runtime, collection, stats)
    log.info("statistics of %s built from %d chunks", collection, stats.chunks)
    return stats
