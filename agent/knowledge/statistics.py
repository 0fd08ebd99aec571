"""What a knowledge base says about itself, computed at ingest: how many chunks hold each index
term, the words of its titles and headings, its languages and its documents' titles.

Nothing here runs inside a question's path in time proportional to the knowledge base. The
statistics live in one SQLite file beside the store (`<data dir>/statistics/`, 0600, WAL) stamped
with the collection's content version, and are looked up a term at a time: opening them costs the
same at 1,000 chunks and at 1,000,000, and a process swapping in newer ones does no Python work
proportional to their size (the JSON file they replaced had to be parsed whole, which held the
event loop for ~50 ms at 100k chunks). An ingest writes only what changed (a new or replaced
file adds its new chunks and takes away its old ones; a pruned file takes its chunks away), in
one transaction, so a reader sees the old statistics or the new ones.

A full scan of the collection runs only to build statistics that do not exist yet (a collection
ingested by an older build) or no longer match the collection (another host's ingest into a
shared Qdrant server) — at ingest, at warm start, or in the background. Counting is Python work
(~0.4 ms a chunk, tokenising): done on the event loop's thread it delayed every question of the
scan's minutes, so a worker process counts at low CPU priority (`statistics_worker.py`) while
this process only reads pages of chunks to it between questions (`Runtime.idle`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator

from agent import sidecar
from agent.knowledge import versions
from agent.knowledge.calibration import CONTENT_KEY
from agent.knowledge.sparse import tokens
from agent.private import private_file

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

FORMAT = 2  # bumped when what the file holds changes: older files are rebuilt
KIND = "statistics"
PAYLOAD = ["title", "section", "text", "lang"]  # what one chunk contributes
SCAN_PAGE = 64  # chunks read per store call while scanning (~0.5 ms of the event loop's time)
COUNTERS = ("df", "headings", "langs", "titles")
SCHEMA = "".join(f"CREATE TABLE IF NOT EXISTS {t}(key TEXT PRIMARY KEY, n INTEGER NOT NULL, seq INTEGER NOT NULL)"
                 " WITHOUT ROWID;" for t in COUNTERS) + \
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT) WITHOUT ROWID;"


@dataclass
class Statistics:
    """Counts in memory: a full build, or what one ingest changes (then counts may be negative)."""

    content_version: str | None = None  # the collection content these describe
    chunks: int = 0
    df: Counter = field(default_factory=Counter)  # term -> chunks containing it
    headings: Counter = field(default_factory=Counter)  # term -> chunks whose title/section has it
    langs: Counter = field(default_factory=Counter)  # language -> chunks written in it
    titles: Counter = field(default_factory=Counter)  # document title -> chunks

    def count(self, payload: dict[str, Any], sign: int = 1) -> None:
        """Add (sign=1) or take away (sign=-1) one chunk, given its payload fields."""
        lang = payload.get("lang") or None
        title, section = str(payload.get("title") or ""), str(payload.get("section") or "")
        text = f"{title} {section} {payload.get('text') or ''}"
        for counter, keys in ((self.df, set(tokens(text, lang))), (self.headings, set(tokens(f"{title} {section}", lang))),
                              (self.langs, [lang or "und"]), (self.titles, [title.strip()] if title.strip() else [])):
            for key in keys:
                counter[key] += sign
                if counter[key] == 0:
                    del counter[key]
        self.chunks += sign


class Counts:
    """One counter of the saved statistics, read a key at a time (a Counter's `get`, `in` and
    `most_common`, ties in the order the keys first appeared)."""

    def __init__(self, db: sqlite3.Connection, table: str) -> None:
        self._db, self._table = db, table

    def get(self, key: str, default: int = 0) -> int:
        rows = self._db.execute(f"SELECT n FROM {self._table} WHERE key = ?", (key,)).fetchall()
        return rows[0][0] if rows else default

    def __getitem__(self, key: str) -> int:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.get(key) > 0

    def most_common(self, n: int | None = None) -> list[tuple[str, int]]:
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
        self.df, self.headings, self.titles = Counts(db, "df"), Counts(db, "headings"), Counts(db, "titles")
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


async def apply(runtime: "Runtime", collection: str, changes: Statistics) -> None:
    """Add what one ingest changed to the saved statistics (which must describe the content the
    ingest started from) and stamp them with `changes.content_version`, in one transaction."""
    await asyncio.to_thread(write, path_of(runtime, collection), changes, False)


class BuildFailed(RuntimeError):
    """The worker process counting a scan did not finish."""


def write(path: Path, stats: Statistics, replace: bool) -> None:
    """Off the event loop (a thread, or the worker process): SQLite releases the GIL as it works."""
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
                row = db.execute("SELECT value FROM meta WHERE key = 'chunks'").fetchone()
                chunks += int(row[0]) if row else 0
            for table in COUNTERS:
                counter: Counter = getattr(stats, table)
                # only titles are ranked (`most_common`): the other tables' order is not read
                start = db.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM titles").fetchone()[0] if table == "titles" else 0
                db.executemany(f"INSERT INTO {table}(key, n, seq) VALUES (?, ?, ?) "
                               "ON CONFLICT(key) DO UPDATE SET n = n + excluded.n",
                               ((k, n, start + i if start else 0) for i, (k, n) in enumerate(counter.items())))
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


async def chunks_of(runtime: "Runtime", collection: str, flt, batch: int = 1024) -> list[dict[str, Any]]:
    """The payloads (PAYLOAD fields) of the chunks matching `flt`."""
    return [payload async for page in pages(runtime, collection, flt, batch) for payload in page]


async def pages(runtime: "Runtime", collection: str, flt, batch: int) -> AsyncIterator[list[dict[str, Any]]]:
    offset = None
    while True:
        points, offset = await runtime.store.scroll(collection, scroll_filter=flt, limit=batch, offset=offset,
                                                    with_payload=PAYLOAD, with_vectors=False)
        yield [p.payload or {} for p in points]
        if offset is None:
            return


async def build(runtime: "Runtime", collection: str) -> int:
    """Statistics from a full scan of the collection's visible chunks (see the module docstring
    for when this runs), saved for the next process; the number of chunks counted."""
    metadata = await runtime.store.collection_metadata(collection)
    if metadata is None:
        return 0
    import agent

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(Path(agent.__file__).parent.parent),
                                                                     os.environ.get("PYTHONPATH")]))}
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "agent.knowledge.statistics_worker", str(path_of(runtime, collection)),
        metadata.get(CONTENT_KEY) or "", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=env)
    assert worker.stdin is not None
    try:
        async for page in pages(runtime, collection, versions.visible(None, metadata), SCAN_PAGE):
            worker.stdin.write("".join(json.dumps([p.get(k) for k in PAYLOAD]) + "\n" for p in page).encode())
            await worker.stdin.drain()  # as fast as the worker counts
            await runtime.idle()
        worker.stdin.close()
        out, _ = await worker.communicate()
        if worker.returncode != 0:
            raise BuildFailed(f"the statistics worker exited with {worker.returncode}")
    finally:
        if worker.returncode is None:  # cancelled (the process is closing) or the store failed
            worker.kill()
            await worker.wait()
    chunks = int(out.decode().strip() or 0)
    log.info("statistics of %s built from %d chunks", collection, chunks)
    return chunks
