"""The state store in one SQLite file (`<data_dir>/askdesk.sqlite`): the embedded default.

aiosqlite (async, no server) on one connection per process, WAL. Every write is one
statement, so it is atomic without holding a transaction open across awaits; a claim's
"is its holder gone?" runs inside the statement as a SQL function (the holder is a process on
this machine: gone when its pid no longer runs). Processes that share the file (a Qdrant
server and several bots on one host) therefore share claims and rate limits too.
"""

from __future__ import annotations

import json
import os
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import aiosqlite

from agent.messages import ChatMessage
from agent.state.base import OWNER, AnswerRecord, Citation, Escalation, StateStore, TurnRecord, utcnow
from agent.state.conversation import Conversation, conversation_key
from agent.state.feedback import Feedback
from agent.state.migrations import migrate_sqlite
from agent.state.sqlite_once import LazyConnection
from agent.state.sweep import RECORD_DAYS, RATE_WINDOW_KEPT_S, Sweeper


def holder_gone(owner: int, pid: int) -> int:
    """1 when the process that made a claim is no longer running (SQL function)."""
    if owner == OWNER:
        return 0
    if pid == os.getpid():
        return 1  # an earlier process that had our pid
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return 1
    except PermissionError:
        return 0
    return 0


async def _setup(db: aiosqlite.Connection) -> None:
    await db.create_function("holder_gone", 2, holder_gone)
    await migrate_sqlite(db)


class SQLiteState(StateStore):
    """Every role (agent/state/base.py), in one SQLite file."""

    backend = "sqlite"

    def __init__(self, path: Path, *, max_messages: int = 50, retention_days: int = 0) -> None:
        self.path = Path(path)
        self.max_messages = max_messages
        self.retention_days = retention_days  # 0: kept until `askdesk report --forget-before`
        self._conn = LazyConnection(self.path, _setup)
        self._sweeper = Sweeper(self._sweep)
        self.reached = True  # the last statement got through (the guard reports recovery on it)

    async def open(self) -> None:
        await self._conn()

    async def close(self) -> None:
        await self._conn.close()

    async def _write(self, sql: str, params: tuple = ()) -> None:
        await self._rows(sql, params, fetch=False)

    async def _rows(self, sql: str, params: tuple = (), *, fetch: bool = True) -> list:
        try:
            db = await self._conn()
            if fetch:
                rows = list(await db.execute_fetchall(sql, params))
            else:
                rows = []
                async with db.execute(sql, params):  # the cursor is closed on the connection's own thread
                    pass
        except BaseException:
            self.reached = False
            raise
        self.reached = True
        return rows

    # ----------------------------------------------------------------- conversation memory
    async def load(self, surface: str, thread_id: str) -> Conversation:
        rows = await self._rows("SELECT role, content FROM messages WHERE conversation = ? ORDER BY id DESC LIMIT ?",
                                (conversation_key(surface, thread_id), self.max_messages))
        return Conversation(surface, thread_id, [ChatMessage(role=r, content=c) for r, c in reversed(rows)])

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        if not messages:
            return
        db = await self._conn()
        key, now = conversation_key(surface, thread_id), time.time()
        async with db.executemany(  # one implicit transaction for the whole turn
                "INSERT INTO messages (conversation, role, content, created) VALUES (?, ?, ?, ?)",
                [(key, m.role, m.content, now) for m in messages]):
            pass

    # ----------------------------------------------------------------- exactly once
    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        await self._sweeper.maybe()
        now = time.time()
        rows = await self._rows(
            "INSERT INTO claims (key, owner, pid, settled, expires) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, "
            "settled = excluded.settled, expires = excluded.expires "
            "WHERE claims.expires <= ? OR (claims.settled = 0 AND holder_gone(claims.owner, claims.pid)) "
            "RETURNING key", (key, OWNER, os.getpid(), int(settled), now + ttl_s, now))
        return bool(rows)

    async def settle(self, *keys: str) -> None:
        for key in keys:
            await self._write("UPDATE claims SET settled = 1 WHERE key = ? AND owner = ?", (key, OWNER))

    async def abandoned(self, prefix: str) -> list[str]:
        # a key range, not LIKE: the primary key's index answers it (keys compare as bytes)
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"
        rows = await self._rows(
            "SELECT key FROM claims WHERE key >= ? AND key < ? AND settled = 0 AND expires > ? "
            "AND holder_gone(owner, pid) ORDER BY key", (prefix, upper, time.time()))
        return [key for (key,) in rows]

    # ----------------------------------------------------------------- rate limits
    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        await self._sweeper.maybe()
        now = time.time()
        counted = await self._rows(
            "INSERT INTO rate_hits (user_id, at) SELECT ?, ? "
            "WHERE (SELECT count(*) FROM rate_hits WHERE user_id = ? AND at > ?) < ? RETURNING at",
            (user_id, now, user_id, now - window_s, limit))
        if counted:
            return 0.0
        (oldest,), = await self._rows("SELECT min(at) FROM rate_hits WHERE user_id = ? AND at > ?",
                                      (user_id, now - window_s))
        return max(0.001, (oldest or now) + window_s - now)

    # ----------------------------------------------------------------- feedback and records
    async def add_feedback(self, item: Feedback) -> None:
        await self._write(
            "INSERT INTO feedback (created_at, surface, user_id, channel, thread, answer_id, rating, route, sources,"
            " question, comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (item.created_at.isoformat(), item.surface, item.user_id, item.channel, item.thread, item.answer_id,
             item.rating, item.route, json.dumps(item.sources), item.question, item.comment))

    async def comment_feedback(self, answer_id: str, user_id: str, comment: str) -> None:
        await self._write(
            "UPDATE feedback SET comment = ? WHERE id = (SELECT max(id) FROM feedback WHERE answer_id = ? AND user_id = ?)",
            (comment, answer_id, user_id))

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]:
        rows = await self._rows(
            "SELECT rating, user_id, surface, channel, thread, answer_id, route, sources, question, created_at, comment "
            "FROM feedback ORDER BY id DESC LIMIT ?", (limit,))
        return [Feedback(rating=r[0], user_id=r[1], surface=r[2], channel=r[3], thread=r[4], answer_id=r[5],
                         route=r[6], sources=json.loads(r[7]), question=r[8],
                         created_at=datetime.fromisoformat(r[9]), comment=r[10]) for r in rows]

    async def feedback(self, since: datetime) -> list[Feedback]:
        # created_at is ISO text: a second's slack in SQL (fractions sort oddly), exact in Python
        rows = await self._rows(
            "SELECT rating, user_id, surface, channel, thread, answer_id, route, sources, question, created_at, comment "
            "FROM feedback WHERE created_at >= ? ORDER BY id",
            ((since.astimezone(timezone.utc) - timedelta(seconds=1)).isoformat(),))
        items = [Feedback(rating=r[0], user_id=r[1], surface=r[2], channel=r[3], thread=r[4], answer_id=r[5],
                          route=r[6], sources=json.loads(r[7]), question=r[8],
                          created_at=datetime.fromisoformat(r[9]), comment=r[10]) for r in rows]
        return [f for f in items if f.created_at >= since]

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None:
        await self._write(
            "INSERT OR REPLACE INTO answer_records (answer_id, route, sources, question, conversation, message_id,"
            " created, asker, is_private) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (record.answer_id, record.route, json.dumps(record.sources), record.question, conversation, message_id,
             time.time(), record.asker, int(record.private)))

    async def answer_record(self, answer_id: str) -> AnswerRecord | None:
        rows = await self._rows(f"SELECT {RECORD_COLUMNS} FROM answer_records WHERE answer_id = ?", (answer_id,))
        return _record(rows)

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None:
        rows = await self._rows(
            f"SELECT {RECORD_COLUMNS} FROM answer_records WHERE conversation = ? AND message_id = ? "
            "ORDER BY created DESC LIMIT 1", (conversation, message_id))
        return _record(rows)

    # ----------------------------------------------------------------- Teams thread askers
    async def remember_asker(self, conversation: str, asker: str) -> None:
        await self._write(
            "INSERT INTO teams_threads (conversation, asker, updated) VALUES (?, ?, ?) "
            "ON CONFLICT (conversation) DO UPDATE SET updated = excluded.updated", (conversation, asker, time.time()))

    async def asker(self, conversation: str) -> str | None:
        rows = await self._rows("SELECT asker FROM teams_threads WHERE conversation = ?", (conversation,))
        return rows[0][0] if rows else None

    # ----------------------------------------------------------------- the report's turns
    async def record_turn(self, turn: TurnRecord) -> None:
        await self._write(
            "INSERT INTO turns (created, surface, outcome, route, answer_id, question, sources, latency_ms, llm_calls,"
            " overridden) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (turn.created_at.timestamp(), turn.surface, turn.outcome, turn.route, turn.answer_id, turn.question,
             json.dumps(turn.sources), turn.latency_ms, turn.llm_calls, int(turn.overridden)))

    async def turns(self, since: datetime) -> list[TurnRecord]:
        rows = await self._rows(
            "SELECT created, surface, outcome, route, answer_id, question, sources, latency_ms, llm_calls, overridden"
            " FROM turns WHERE created >= ? ORDER BY id", (since.timestamp(),))
        return [turn_of(r) for r in rows]

    async def citations(self, sources: list[str], since: datetime) -> list[Citation]:
        if not sources:
            return []
        rows = await self._rows(
            "SELECT j.value, t.created, t.question FROM turns t, json_each(t.sources) j"
            " WHERE t.created >= ? AND t.sources != '[]' AND j.value IN (SELECT value FROM json_each(?))"
            " ORDER BY t.created, t.id", (since.timestamp(), json.dumps(sources)))  # by created: its index is used
        return [Citation(source=s, created_at=datetime.fromtimestamp(c, timezone.utc), question=q) for s, c, q in rows]

    # ----------------------------------------------------------------- escalations
    async def save_escalation(self, item: Escalation) -> None:
        await self._write(
            "INSERT OR REPLACE INTO escalations (id, created, target_channel, target_thread, status, data)"
            " VALUES (?, ?, ?, ?, ?, ?)", (item.id, item.created_at.timestamp(), item.target_channel,
                                          item.target_thread, item.status, item.model_dump_json()))

    async def escalation(self, escalation_id: str) -> Escalation | None:
        rows = await self._rows("SELECT data FROM escalations WHERE id = ?", (escalation_id,))
        return Escalation.model_validate_json(rows[0][0]) if rows else None

    async def escalation_in_thread(self, channel: str, thread: str) -> Escalation | None:
        rows = await self._rows("SELECT data FROM escalations WHERE target_channel = ? AND target_thread = ?",
                                (channel, thread))
        return Escalation.model_validate_json(rows[0][0]) if rows else None

    async def answer_escalation(self, escalation_id: str, *, expert_id: str, expert_name: str | None,
                                text: str) -> Escalation | None:
        rows = await self._rows(
            "UPDATE escalations SET status = 'answered', data = json_set(data, '$.status', 'answered',"
            " '$.expert_id', ?, '$.expert_name', ?, '$.expert_answer', ?, '$.answered_at', ?)"
            " WHERE id = ? AND status = 'open' RETURNING data",
            (expert_id, expert_name, text, utcnow().isoformat(), escalation_id))
        return Escalation.model_validate_json(rows[0][0]) if rows else None

    async def escalations(self, since: datetime) -> list[Escalation]:
        rows = await self._rows("SELECT data FROM escalations WHERE created >= ? ORDER BY created",
                                (since.timestamp(),))
        return [Escalation.model_validate_json(r[0]) for r in rows]

    # ----------------------------------------------------------------- retention
    async def forget_before(self, when: datetime) -> dict[str, int]:
        cut, iso = when.timestamp(), when.astimezone(timezone.utc).isoformat()
        counts: dict[str, int] = {}
        for table, sql, param in (("messages", "DELETE FROM messages WHERE created < ? RETURNING 1", cut),
                                  ("turns", "DELETE FROM turns WHERE created < ? RETURNING 1", cut),
                                  ("feedback", "DELETE FROM feedback WHERE created_at < ? RETURNING 1", iso),
                                  ("escalations", "DELETE FROM escalations WHERE created < ? RETURNING 1", cut)):
            counts[table] = len(await self._rows(sql, (param,)))
        return counts

    # ----------------------------------------------------------------- bounded tables
    async def _sweep(self) -> None:
        now = time.time()
        if self.retention_days > 0:
            await self.forget_before(datetime.fromtimestamp(now - self.retention_days * 86400, timezone.utc))
        await self._write("DELETE FROM claims WHERE expires <= ?", (now,))
        await self._write("DELETE FROM rate_hits WHERE at <= ?", (now - RATE_WINDOW_KEPT_S,))
        await self._write("DELETE FROM answer_records WHERE created <= ?", (now - RECORD_DAYS * 86400,))


def turn_of(r) -> TurnRecord:
    """A `turns` row (created, surface, outcome, route, answer_id, question, sources, latency_ms, llm_calls,
    overridden)."""
    return TurnRecord(created_at=datetime.fromtimestamp(r[0], timezone.utc), surface=r[1], outcome=r[2], route=r[3],
                      answer_id=r[4], question=r[5], sources=json.loads(r[6]), latency_ms=r[7], llm_calls=r[8],
                      overridden=bool(r[9]))


RECORD_COLUMNS = "answer_id, route, sources, question, asker, is_private"


def _record(rows: list) -> AnswerRecord | None:
    if not rows:
        return None
    answer_id, route, sources, question, asker, private = rows[0]
    return AnswerRecord(answer_id=answer_id, route=route, sources=json.loads(sources), question=question,
                        asker=asker, private=bool(private))
