"""The console's server-side state: admins' sessions and the bootstrap token, in
`<data_dir>/console.sqlite` (one small SQLite file, so a restart keeps people signed in).

Only hashes of secrets are stored: a session is found by the SHA-256 of its cookie, and the
bootstrap token by the SHA-256 of its value, so a copy of the file signs no one in. Queries
are tiny and local, so they run on the event loop without a thread."""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import time
from pathlib import Path

from pydantic import BaseModel

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY, subject TEXT NOT NULL, name TEXT NOT NULL, via TEXT NOT NULL,
    csrf TEXT NOT NULL, created REAL NOT NULL, expires REAL NOT NULL);
CREATE TABLE IF NOT EXISTS bootstrap (
    hash TEXT PRIMARY KEY, created REAL NOT NULL, used REAL);
"""


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class Admin(BaseModel):
    """Who signed in: the ASKDESK_ADMINS entry (or "bootstrap") that let them in, a name to
    show, and how (the provider's issuer, or "bootstrap")."""

    subject: str
    name: str
    via: str


class Session(BaseModel):
    id: str  # the hash of the cookie's value
    admin: Admin
    csrf: str  # every POST of this session carries it (bot/console/guard.py)
    created: float
    expires: float


class ConsoleStore:
    """Sessions and the bootstrap token (see the module docstring)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None)
        self._db.executescript(SCHEMA)

    def close(self) -> None:
        self._db.close()

    # --- sessions -------------------------------------------------------------------------
    def open_session(self, admin: Admin, hours: float) -> tuple[str, Session]:
        """A new session (a fresh id at every sign-in: no fixation); its cookie value and record."""
        token = secrets.token_urlsafe(32)
        now = time.time()
        session = Session(id=digest(token), admin=admin, csrf=secrets.token_urlsafe(32), created=now,
                          expires=now + hours * 3600)
        self._db.execute("DELETE FROM sessions WHERE expires < ?", (now,))
        self._db.execute("INSERT INTO sessions VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (session.id, admin.subject, admin.name, admin.via, session.csrf, now, session.expires))
        return token, session

    def session(self, token: str | None) -> Session | None:
        """The live session of a cookie's value; None when unknown or expired."""
        if not token:
            return None
        row = self._db.execute("SELECT id, subject, name, via, csrf, created, expires FROM sessions WHERE id = ?",
                               (digest(token),)).fetchone()
        if row is None or row[6] < time.time():
            return None
        return Session(id=row[0], admin=Admin(subject=row[1], name=row[2], via=row[3]), csrf=row[4],
                       created=row[5], expires=row[6])

    def end_session(self, session_id: str) -> None:
        self._db.execute("DELETE FROM sessions WHERE id = ?", (session_id,))

    # --- the bootstrap token ----------------------------------------------------------------
    def bootstrap_used(self) -> bool:
        return self._db.execute("SELECT 1 FROM bootstrap WHERE used IS NOT NULL").fetchone() is not None

    def new_bootstrap(self) -> str | None:
        """A new one-time token while none has been used (the value is shown once, only its hash
        kept; an unused one from an earlier start is replaced); None once one was used."""
        if self.bootstrap_used():
            return None
        token = secrets.token_urlsafe(32)
        self._db.execute("DELETE FROM bootstrap WHERE used IS NULL")
        self._db.execute("INSERT INTO bootstrap VALUES (?, ?, NULL)", (digest(token), time.time()))
        return token

    def pending_bootstrap(self) -> bool:
        """A token was issued and not used yet (the sign-in page offers its form)."""
        return not self.bootstrap_used() and \
            self._db.execute("SELECT 1 FROM bootstrap WHERE used IS NULL").fetchone() is not None

    def use_bootstrap(self, token: str) -> bool:
        """Consume the token: True exactly once for the right value."""
        if not token:
            return False
        cursor = self._db.execute("UPDATE bootstrap SET used = ? WHERE hash = ? AND used IS NULL",
                                  (time.time(), digest(token)))
        return cursor.rowcount == 1
