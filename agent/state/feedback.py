"""Answer feedback (👍/👎) in the embedded SQLite store.

Who, when, where (surface, channel, thread), the route and the cited sources of the rated
answer. The question text is kept only when `settings.store_text` is on: by default the
store holds no message content.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

import aiosqlite
from pydantic import BaseModel, Field

from agent.private import private_file

Rating = Literal["up", "down"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS feedback (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at TEXT NOT NULL,
    surface TEXT NOT NULL,
    user_id TEXT NOT NULL,
    channel TEXT,
    thread TEXT,
    answer_id TEXT,
    rating TEXT NOT NULL CHECK (rating IN ('up', 'down')),
    route TEXT,
    sources TEXT NOT NULL DEFAULT '[]',
    question TEXT
)
"""


class Feedback(BaseModel):
    rating: Rating
    user_id: str
    surface: str = "slack"
    channel: str | None = None
    thread: str | None = None
    answer_id: str | None = None
    route: str | None = None
    sources: list[str] = Field(default_factory=list)
    question: str | None = None
    created_at: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))


class FeedbackStore:
    def __init__(self, path: Path, *, store_text: bool = False) -> None:
        self.path = Path(path)
        self.store_text = store_text
        self._ready = False

    async def _connect(self) -> aiosqlite.Connection:
        private_file(self.path)
        db = await aiosqlite.connect(self.path, timeout=10)
        if not self._ready:
            await db.execute(_SCHEMA)
            await db.commit()
            self._ready = True
        return db

    async def add(self, item: Feedback) -> None:
        question = item.question if self.store_text else None
        db = await self._connect()
        try:
            await db.execute(
                "INSERT INTO feedback (created_at, surface, user_id, channel, thread, answer_id, rating, route,"
                " sources, question) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    item.created_at.isoformat(), item.surface, item.user_id, item.channel, item.thread,
                    item.answer_id, item.rating, item.route, json.dumps(item.sources), question,
                ),
            )
            await db.commit()
        finally:
            await db.close()

    async def recent(self, limit: int = 100) -> list[Feedback]:
        db = await self._connect()
        try:
            db.row_factory = aiosqlite.Row
            rows = await (await db.execute("SELECT * FROM feedback ORDER BY id DESC LIMIT ?", (limit,))).fetchall()
        finally:
            await db.close()
        return [
            Feedback(
                rating=r["rating"], user_id=r["user_id"], surface=r["surface"], channel=r["channel"],
                thread=r["thread"], answer_id=r["answer_id"], route=r["route"], sources=json.loads(r["sources"]),
                question=r["question"], created_at=datetime.fromisoformat(r["created_at"]),
            )
            for r in rows
        ]
