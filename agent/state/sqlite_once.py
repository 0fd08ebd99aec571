"""One aiosqlite connection per store, opened on first use, safe when the first uses race.

Stores open their file lazily so that building the service touches no disk. Twenty
questions arriving together all make that "first" call at once: without the lock each
would open its own connection, later ones would replace the store's connection while an
earlier caller was still creating the schema ("no such table"), and every replaced
connection would leak its worker thread, which is not a daemon and keeps the process from
exiting.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import aiosqlite

from agent.private import private_file


class LazyConnection:
    """`await conn()` returns the one open connection (autocommit mode: each statement is its
    own transaction unless one is begun), creating the file, its pragmas and running `setup`
    (functions, migrations) the first time; `close()` closes it (a later call reopens)."""

    def __init__(self, path: Path, setup: Callable[[aiosqlite.Connection], Awaitable[object]], *,
                 timeout: float = 10.0) -> None:
        self.path = Path(path)
        self.setup = setup
        self.timeout = timeout
        self._db: aiosqlite.Connection | None = None
        self._lock = asyncio.Lock()

    async def __call__(self) -> aiosqlite.Connection:
        if self._db is not None:
            return self._db
        async with self._lock:
            if self._db is None:
                private_file(self.path)  # 0600 in a 0700 dir: conversations are private
                db = await aiosqlite.connect(self.path, timeout=self.timeout, isolation_level=None)
                try:
                    # WAL + synchronous=NORMAL: a commit is a write, not an fsync (durable
                    # across process crashes; the last turns may be lost only on power loss).
                    for pragma in ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL"):
                        async with db.execute(pragma):  # cursors closed on the connection's thread
                            pass
                    await self.setup(db)
                except BaseException:
                    await db.close()
                    raise
                self._db = db  # published only once its schema is up to date
        return self._db

    async def close(self) -> None:
        async with self._lock:
            if self._db is not None:
                db, self._db = self._db, None
                await db.close()
