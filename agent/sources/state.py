"""What the sync engine remembers per source, in `<data_dir>/sources.sqlite`: the cursor a
source handed back, when it last synced and how, and every document it wrote (ref, version,
key, title, link), so an unchanged document is never read or embedded again and a sync killed
half-way resumes where it stopped. Every change is committed as soon as the document it
describes is in the index."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from agent.sources.base import Listed

SCHEMA = """
CREATE TABLE IF NOT EXISTS sources (
    name TEXT PRIMARY KEY, kind TEXT NOT NULL, fingerprint TEXT NOT NULL DEFAULT '',
    cursor TEXT, last_sync REAL, last_attempt REAL, last_error TEXT, last_report TEXT
);
CREATE TABLE IF NOT EXISTS documents (
    source TEXT NOT NULL, ref TEXT NOT NULL, version TEXT NOT NULL, key TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '', url TEXT, listed TEXT NOT NULL, error TEXT,
    PRIMARY KEY (source, ref)
);
"""


@dataclass
class SourceRow:
    name: str
    kind: str
    fingerprint: str = ""
    cursor: str | None = None
    last_sync: float | None = None
    last_attempt: float | None = None
    last_error: str | None = None
    last_report: dict | None = None


@dataclass
class DocumentRow:
    ref: str
    version: str
    key: str
    title: str
    url: str | None
    listed: Listed
    error: str | None


class SyncState:
    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def source(self, name: str) -> SourceRow | None:
        row = self.db.execute("SELECT name, kind, fingerprint, cursor, last_sync, last_attempt, last_error, "
                              "last_report FROM sources WHERE name = ?", (name,)).fetchone()
        if row is None:
            return None
        return SourceRow(*row[:7], json.loads(row[7]) if row[7] else None)

    def start(self, name: str, kind: str, fingerprint: str) -> tuple[SourceRow, bool]:
        """The source's row, created or reset (cursor dropped) when its settings changed, and
        whether they did (every document is then read again: its audience may have changed)."""
        row = self.source(name)
        now = time.time()
        changed = row is not None and (row.fingerprint != fingerprint or row.kind != kind)
        if row is None or changed:
            self.db.execute("INSERT INTO sources (name, kind, fingerprint, cursor, last_attempt) VALUES (?,?,?,NULL,?) "
                            "ON CONFLICT(name) DO UPDATE SET kind=excluded.kind, fingerprint=excluded.fingerprint, "
                            "cursor=NULL, last_attempt=excluded.last_attempt", (name, kind, fingerprint, now))
        else:
            self.db.execute("UPDATE sources SET last_attempt = ? WHERE name = ?", (now, name))
        return self.source(name), changed  # type: ignore[return-value]

    def documents(self, name: str) -> dict[str, DocumentRow]:
        rows = self.db.execute("SELECT ref, version, key, title, url, listed, error FROM documents WHERE source = ?",
                               (name,)).fetchall()
        return {r[0]: DocumentRow(r[0], r[1], r[2], r[3], r[4], Listed.model_validate_json(r[5]), r[6]) for r in rows}

    def count(self, name: str) -> int:
        return self.db.execute("SELECT count(*) FROM documents WHERE source = ? AND error IS NULL",
                               (name,)).fetchone()[0]

    def written(self, name: str, item: Listed, key: str, title: str, url: str | None) -> None:
        self.db.execute("INSERT OR REPLACE INTO documents (source, ref, version, key, title, url, listed, error) "
                        "VALUES (?,?,?,?,?,?,?,NULL)", (name, item.ref, item.version, key, title, url,
                                                        item.model_dump_json()))

    def failed(self, name: str, item: Listed, key: str, error: str) -> None:
        """A document that could not be read: kept to be tried again, whatever the feed says."""
        self.db.execute("INSERT INTO documents (source, ref, version, key, title, url, listed, error) "
                        "VALUES (?,?,'',?,?,?,?,?) ON CONFLICT(source, ref) DO UPDATE SET error=excluded.error, "
                        "listed=excluded.listed", (name, item.ref, key, item.title, item.url,
                                                   item.model_dump_json(), error))

    def removed(self, name: str, refs: list[str]) -> None:
        self.db.executemany("DELETE FROM documents WHERE source = ? AND ref = ?", [(name, r) for r in refs])

    def finished(self, name: str, cursor: str | None, report: dict) -> None:
        self.db.execute("UPDATE sources SET cursor = ?, last_sync = ?, last_error = NULL, last_report = ? "
                        "WHERE name = ?", (cursor, time.time(), json.dumps(report), name))

    def error(self, name: str, message: str) -> None:
        self.db.execute("UPDATE sources SET last_error = ? WHERE name = ?", (message, name))

    def forget(self, name: str) -> None:
        self.db.execute("DELETE FROM documents WHERE source = ?", (name,))
        self.db.execute("DELETE FROM sources WHERE name = ?", (name,))

    def names(self) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT name FROM sources ORDER BY name")]
