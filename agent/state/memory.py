"""Conversation memory: history keyed by surface + thread id, trimmed to a character budget.

Slack reads history back from the thread itself and passes it in the request; Teams and
the terminal keep it here, in an embedded SQLite file (aiosqlite: async, no server).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from agent.messages import ChatMessage
from agent.state.sqlite_once import LazyConnection


def conversation_key(surface: str, thread_id: str) -> str:
    return f"{surface}:{thread_id}"


def trim_history(messages: list[ChatMessage], budget_chars: int) -> list[ChatMessage]:
    """The newest messages whose contents fit in `budget_chars` (order kept).

    A single newest message longer than the budget is cut from its start, so the model
    always sees the latest context."""
    if budget_chars <= 0 or not messages:
        return []
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(messages):
        size = len(message.content)
        if used + size > budget_chars:
            if not kept:
                kept.append(message.model_copy(update={"content": message.content[-budget_chars:]}))
            break
        kept.append(message)
        used += size
    kept.reverse()
    return kept


@dataclass
class Conversation:
    """One thread's history (user and assistant turns only)."""

    surface: str
    thread_id: str
    messages: list[ChatMessage] = field(default_factory=list)

    @property
    def key(self) -> str:
        return conversation_key(self.surface, self.thread_id)

    def trimmed(self, budget_chars: int) -> list[ChatMessage]:
        return trim_history(self.messages, budget_chars)


class ConversationStore(Protocol):
    async def load(self, surface: str, thread_id: str) -> Conversation: ...

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None: ...

    async def close(self) -> None: ...


class MemoryConversationStore:
    """In-process store (benchmarks, eval): same behaviour, nothing on disk."""

    def __init__(self) -> None:
        self._data: dict[str, list[ChatMessage]] = {}

    async def load(self, surface: str, thread_id: str) -> Conversation:
        key = conversation_key(surface, thread_id)
        return Conversation(surface, thread_id, list(self._data.get(key, [])))

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        self._data.setdefault(conversation_key(surface, thread_id), []).extend(messages)

    async def close(self) -> None:
        return None


_SCHEMA = """
CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation, id);
"""


class SQLiteConversationStore:
    """History in one SQLite file; reads return only the newest `max_messages` per thread."""

    def __init__(self, path: Path, *, max_messages: int = 50) -> None:
        self.path = Path(path)
        self.max_messages = max_messages
        self._conn = LazyConnection(self.path, _SCHEMA)

    async def load(self, surface: str, thread_id: str) -> Conversation:
        db = await self._conn()
        key = conversation_key(surface, thread_id)
        rows = await db.execute_fetchall(
            "SELECT role, content FROM messages WHERE conversation = ? ORDER BY id DESC LIMIT ?",
            (key, self.max_messages),
        )
        messages = [ChatMessage(role=role, content=content) for role, content in reversed(rows)]
        return Conversation(surface, thread_id, messages)

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        if not messages:
            return
        db = await self._conn()
        key = conversation_key(surface, thread_id)
        now = time.time()
        # `async with` closes the cursor on the connection's own thread: one left to the garbage
        # collector is finalized on the event loop's thread, racing the worker ("API misuse").
        async with db.executemany(
            "INSERT INTO messages (conversation, role, content, created) VALUES (?, ?, ?, ?)",
            [(key, m.role, m.content, now) for m in messages],
        ):
            pass
        await db.commit()

    async def close(self) -> None:
        await self._conn.close()
