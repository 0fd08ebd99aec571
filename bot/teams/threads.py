"""Who asked in each channel reply chain and group chat the bot answered.

A follow-up without a new @mention is answered only when it comes from that person, so a
colleague's side remark in the thread does not wake the bot. Kept in the SQLite file next
to the conversation history (aiosqlite), so follow-ups still work after a restart.
"""

from __future__ import annotations

import time
from pathlib import Path

from agent.state.sqlite_once import LazyConnection

_SCHEMA = """
CREATE TABLE IF NOT EXISTS teams_threads (
    conversation TEXT PRIMARY KEY,
    asker TEXT NOT NULL,
    updated REAL NOT NULL
)
"""


class ThreadAskers:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._conn = LazyConnection(self.path, _SCHEMA)

    async def remember(self, conversation: str, asker: str) -> None:
        """The bot answered `asker` in `conversation` (the first asker keeps the thread)."""
        db = await self._conn()
        async with db.execute(  # closes its cursor on the connection's thread (agent/state/memory.py)
            "INSERT INTO teams_threads (conversation, asker, updated) VALUES (?, ?, ?) "
            "ON CONFLICT(conversation) DO UPDATE SET updated = excluded.updated",
            (conversation, asker, time.time()),
        ):
            pass
        await db.commit()

    async def asker(self, conversation: str) -> str | None:
        db = await self._conn()
        rows = await db.execute_fetchall("SELECT asker FROM teams_threads WHERE conversation = ?", (conversation,))
        return rows[0][0] if rows else None

    async def close(self) -> None:
        await self._conn.close()
