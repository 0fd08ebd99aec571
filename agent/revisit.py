"""Answers to revisit: which recent answers cited a document that has since changed or gone.

Every answer with sources is kept here for ASKDESK_REVISIT_DAYS (`cite`): where it was given
(surface, thread, the delivered message), who asked, the audience keys its search saw, whether
it was private, and the question only when its text may be stored. When an ingest or a sync
replaces or removes documents (agent/knowledge/ingest.py calls `documents_changed`), the
answers of that window that cited one of them are listed (`Revisit`), once per answer and
document change; the console's Revisit page reads the list, and with ASKDESK_REVISIT_NOTIFY the
serving process tells each asker (bot/revisit.py).

The list lives in `<data_dir>/revisit.sqlite`, next to the sync state: the process that holds
the knowledge base is the one that learns that a document changed. A private answer is listed
without text and never noted; an answer whose question was not stored gets a note without a
new answer.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from agent.config import Settings

Change = Literal["changed", "removed"]
# listed: on the console only; pending: a note is due; noted / noted_without_answer: the asker
# was told; private: never noted; undeliverable: no surface in this process could post it
Status = Literal["listed", "pending", "noted", "noted_without_answer", "private", "undeliverable"]
FILE = "revisit.sqlite"
SHOWN = 300  # revisits the console lists

SCHEMA = """
CREATE TABLE IF NOT EXISTS cited (
    answer_id TEXT PRIMARY KEY, created REAL NOT NULL, surface TEXT NOT NULL, thread_id TEXT NOT NULL,
    message_id TEXT, asker TEXT, private INTEGER NOT NULL, question TEXT, audience TEXT, collection TEXT,
    route TEXT
);
CREATE INDEX IF NOT EXISTS cited_created ON cited (created);
CREATE TABLE IF NOT EXISTS cited_sources (
    source TEXT NOT NULL, created REAL NOT NULL, answer_id TEXT NOT NULL, PRIMARY KEY (source, created, answer_id)
);
CREATE TABLE IF NOT EXISTS revisits (
    id INTEGER PRIMARY KEY AUTOINCREMENT, answer_id TEXT NOT NULL, source TEXT NOT NULL, change TEXT NOT NULL,
    found REAL NOT NULL, status TEXT NOT NULL, noted REAL, UNIQUE (answer_id, source, found)
);
CREATE INDEX IF NOT EXISTS revisits_status ON revisits (status, id);
"""


class CitedAnswer(BaseModel):
    """An answer with sources, as the turn runner delivered it (bot/revisit.py)."""

    answer_id: str
    created: float
    surface: str
    thread_id: str  # the surface's conversation (Slack `channel:thread_ts`, a Teams conversation id)
    message_id: str | None = None
    asker: str | None = None
    private: bool = False
    question: str | None = None  # only with ASKDESK_STORE_TEXT, never for a private answer
    audience: list[str] | None = None  # the keys its search saw (None: unrestricted, the terminal)
    collection: str | None = None
    route: str | None = None
    sources: list[str] = []


class Revisit(BaseModel):
    """One answer that cited a document that changed after it was given."""

    id: int
    source: str  # the document's key (a file name, `@<source>/<ref>`)
    change: Change
    found: float
    status: Status
    noted: float | None = None
    answer: CitedAnswer


class RevisitLog:
    """The cited answers and the revisit list, in one SQLite file (short statements, autocommit;
    one connection shared by the threads a server hands its writes to, one at a time)."""

    def __init__(self, path: Path) -> None:
        self._lock = threading.RLock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA busy_timeout=5000")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def cite(self, answer: CitedAnswer, *, keep_days: int) -> None:
        """Keep an answer and its sources; answers older than `keep_days` are dropped."""
        if not answer.sources:
            return
        with self._lock:
            self._cite(answer, keep_days)

    def _cite(self, answer: CitedAnswer, keep_days: int) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.execute(
                "INSERT OR REPLACE INTO cited (answer_id, created, surface, thread_id, message_id, asker, private, "
                "question, audience, collection, route) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (answer.answer_id, answer.created, answer.surface, answer.thread_id, answer.message_id, answer.asker,
                 int(answer.private), None if answer.private else answer.question,
                 None if answer.audience is None else json.dumps(sorted(answer.audience)), answer.collection,
                 answer.route))
            self.db.executemany("INSERT OR IGNORE INTO cited_sources (source, created, answer_id) VALUES (?,?,?)",
                                [(s, answer.created, answer.answer_id) for s in dict.fromkeys(answer.sources)])
            cut = time.time() - keep_days * 86400
            self.db.execute("DELETE FROM cited_sources WHERE created < ?", (cut,))
            self.db.execute("DELETE FROM revisits WHERE found < ?", (cut,))
            self.db.execute("DELETE FROM cited WHERE created < ? AND answer_id NOT IN "
                            "(SELECT answer_id FROM revisits)", (cut,))
            self.db.execute("COMMIT")
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def documents_changed(self, changes: dict[str, Change], *, days: int, notify: bool,
                          now: float | None = None) -> list[Revisit]:
        """List the answers of the last `days` that cited one of `changes`' documents; the new
        revisits (a note is due for each public one when `notify`)."""
        with self._lock:
            return self._changed(changes, days=days, notify=notify, now=time.time() if now is None else now)

    def _changed(self, changes: dict[str, Change], *, days: int, notify: bool, now: float) -> list[Revisit]:
        cut = now - days * 86400
        found: list[tuple[str, str, Change, Status]] = []
        told: set[str] = set()  # answers whose asker is told already: one note per answer
        for source, change in changes.items():
            rows = self.db.execute("SELECT s.answer_id, c.private FROM cited_sources s JOIN cited c USING (answer_id) "
                                   "WHERE s.source = ? AND s.created >= ? AND s.created <= ?", (source, cut, now))
            for answer_id, private in rows.fetchall():
                status: Status = "private" if private else "listed"
                if notify and not private and answer_id not in told and not self._told(answer_id):
                    status = "pending"
                    told.add(answer_id)
                found.append((answer_id, source, change, status))
        if not found:
            return []
        self.db.executemany("INSERT OR IGNORE INTO revisits (answer_id, source, change, found, status) "
                            "VALUES (?,?,?,?,?)", [(a, s, c, now, st) for a, s, c, st in found])
        return self.revisits(found=now, limit=len(found))

    def _told(self, answer_id: str) -> bool:
        """A note to this answer's asker is due or sent already."""
        return self.db.execute("SELECT 1 FROM revisits WHERE answer_id = ? AND status NOT IN ('listed', 'private') "
                               "LIMIT 1", (answer_id,)).fetchone() is not None

    def revisits(self, *, status: Status | None = None, found: float | None = None,
                 limit: int = SHOWN) -> list[Revisit]:
        """The newest revisits first (or those of one status, oldest first: the notes' queue)."""
        where, params, order = [], [], "r.id DESC"
        if status is not None:
            where.append("r.status = ?")
            params.append(status)
            order = "r.id"
        if found is not None:
            where.append("r.found = ?")
            params.append(found)
        sql = ("SELECT r.id, r.source, r.change, r.found, r.status, r.noted, c.answer_id, c.created, c.surface, "
               "c.thread_id, c.message_id, c.asker, c.private, c.question, c.audience, c.collection, c.route "
               "FROM revisits r JOIN cited c USING (answer_id)"
               + (" WHERE " + " AND ".join(where) if where else "") + f" ORDER BY {order} LIMIT ?")
        with self._lock:
            rows = self.db.execute(sql, (*params, limit)).fetchall()
        return [Revisit(id=r[0], source=r[1], change=r[2], found=r[3], status=r[4], noted=r[5], answer=CitedAnswer(
            answer_id=r[6], created=r[7], surface=r[8], thread_id=r[9], message_id=r[10], asker=r[11],
            private=bool(r[12]), question=r[13], audience=None if r[14] is None else json.loads(r[14]),
            collection=r[15], route=r[16])) for r in rows]

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM revisits").fetchone()[0]

    def mark(self, revisit_id: int, status: Status) -> None:
        with self._lock:
            self.db.execute("UPDATE revisits SET status = ?, noted = ? WHERE id = ?",
                            (status, time.time() if status.startswith("noted") else None, revisit_id))


def open_log(settings: "Settings") -> RevisitLog:
    return RevisitLog(settings.data_dir / FILE)


def documents_changed(settings: "Settings", changes: dict[str, Change]) -> list[Revisit]:
    """What an ingest or sync that replaced or removed `changes`' documents puts on the list."""
    if not changes or not (settings.data_dir / FILE).exists():  # no answer was ever kept: nothing cited them
        return []
    log = open_log(settings)
    try:
        return log.documents_changed(changes, days=settings.revisit_days, notify=settings.revisit_notify)
    finally:
        log.close()
