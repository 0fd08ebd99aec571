"""The state store in PostgreSQL (`ASKDESK_DATABASE_URL`): what replicas share.

asyncpg: the async driver with its own connection pool, prepared statements cached per
connection and the binary protocol (a claim or a rate-limit hit is one round trip of well
under a millisecond on a local network). Every operation is one statement (the rate limit is
one call of a SQL function, `askdesk_rate_hit`, that serialises one user's hits), so nothing
holds a transaction across awaits.

A claim's holder is a replica. Each replica holds a session advisory lock on its own key for
as long as it is connected (`presence`); PostgreSQL drops it the moment the replica's
connection closes, `kill -9` included. A claim that was never settled and whose holder's lock
is gone may be taken over, so a retried Slack event whose first replica died mid-turn is
answered by another one. A connection that broke (a database restart) is replaced and the
operation tried once more.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta, timezone
from typing import Any, TypeVar
from urllib.parse import urlsplit

import asyncpg

from agent.messages import ChatMessage
from agent.state.base import OWNER, AnswerRecord, Citation, Escalation, StateStore, StateUnavailable, TurnRecord, utcnow
from agent.state.conversation import Conversation, conversation_key
from agent.state.feedback import Feedback
from agent.state.migrations import LOCK_SPACE, migrate_postgres
from agent.state.sweep import RECORD_DAYS, RATE_WINDOW_KEPT_S, Sweeper

log = logging.getLogger("askdesk.state")

T = TypeVar("T")
NOW = "extract(epoch FROM clock_timestamp())"  # the database's clock: replicas' clocks may differ
BROKEN = (asyncpg.PostgresConnectionError, asyncpg.InterfaceError, ConnectionError, OSError)


def where(url: str) -> str:
    """host:port/database of a URL, for messages (never its password)."""
    parts = urlsplit(url)
    host = parts.hostname or "localhost"
    return f"{host}:{parts.port or 5432}{parts.path or ''}"


class PostgresState(StateStore):
    """Every role (agent/state/base.py), shared by the replicas of one database."""

    backend = "postgres"

    def __init__(self, url: str, *, max_messages: int = 50, pool_size: int = 10, timeout: float = 5.0,
                 retention_days: int = 0) -> None:
        self.url = url
        self.max_messages = max_messages
        self.retention_days = retention_days  # 0: kept until `askdesk report --forget-before`
        self.pool_size = pool_size
        self.timeout = timeout
        self._pool: asyncpg.Pool | None = None
        self._presence: asyncpg.Connection | None = None
        self._lock = asyncio.Lock()
        self._sweeper = Sweeper(self._sweep)
        self.reached = True  # the last statement got through (the guard reports recovery on it)

    async def open(self) -> None:
        """Connect, migrate and announce this replica; StateUnavailable (one line) when the
        database cannot be reached."""
        if self._pool is not None:
            return
        async with self._lock:
            if self._pool is not None:
                return
            try:
                pool = await asyncpg.create_pool(self.url, min_size=1, max_size=self.pool_size,
                                                 timeout=self.timeout, command_timeout=self.timeout)
            except (asyncpg.PostgresError, asyncio.TimeoutError, *BROKEN) as exc:
                raise StateUnavailable(f"cannot reach PostgreSQL at {where(self.url)} "
                                       f"({type(exc).__name__}: {exc})") from None
            try:
                async with pool.acquire() as conn:
                    await migrate_postgres(conn)
            except BaseException:
                await pool.close()
                raise
            self._pool = pool
            await self._announce()

    async def close(self) -> None:
        async with self._lock:
            if self._presence is not None:
                presence, self._presence = self._presence, None
                await presence.close()
            if self._pool is not None:
                pool, self._pool = self._pool, None
                await pool.close()

    async def _announce(self) -> None:
        """Hold this replica's presence lock (again, after its connection broke)."""
        if self._presence is not None and not self._presence.is_closed():
            return
        conn = await asyncpg.connect(self.url, timeout=self.timeout)
        # not granted only when another store of this same process holds it: present either way
        await conn.execute("SELECT pg_try_advisory_lock($1, $2)", LOCK_SPACE, OWNER)
        self._presence = conn

    async def _run(self, op: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        if self._pool is None:
            try:
                await self.open()
            except BaseException:
                self.reached = False
                raise
        assert self._pool is not None
        for attempt in (1, 2):
            try:
                async with self._pool.acquire() as conn:
                    found = await op(conn)
                self.reached = True
                return found
            except BROKEN:
                if attempt == 2:
                    self.reached = False
                    raise
                log.info("state store: a PostgreSQL connection broke; trying again on a new one")
        raise AssertionError("unreachable")

    async def _execute(self, sql: str, *args: Any) -> None:
        await self._run(lambda c: c.execute(sql, *args))

    async def _fetch(self, sql: str, *args: Any) -> list:
        return await self._run(lambda c: c.fetch(sql, *args))

    # ----------------------------------------------------------------- conversation memory
    async def load(self, surface: str, thread_id: str) -> Conversation:
        rows = await self._fetch("SELECT role, content FROM messages WHERE conversation = $1 ORDER BY id DESC LIMIT $2",
                                 conversation_key(surface, thread_id), self.max_messages)
        return Conversation(surface, thread_id, [ChatMessage(role=r["role"], content=r["content"])
                                                 for r in reversed(rows)])

    async def append(self, surface: str, thread_id: str, messages: list[ChatMessage]) -> None:
        if not messages:
            return
        key = conversation_key(surface, thread_id)
        await self._execute(
            f"INSERT INTO messages (conversation, role, content, created) "
            f"SELECT $1, r, c, {NOW} FROM unnest($2::text[], $3::text[]) AS m(r, c)",
            key, [m.role for m in messages], [m.content for m in messages])

    # ----------------------------------------------------------------- exactly once
    async def claim(self, key: str, ttl_s: float, *, settled: bool = False) -> bool:
        await self._sweeper.maybe()
        if not settled:
            try:
                await self._announce()  # our unsettled claims are safe only while we are present
            except BROKEN as exc:
                log.info("state store: presence not re-established (%s)", type(exc).__name__)
        rows = await self._fetch(
            f"INSERT INTO claims (key, owner, settled, expires) VALUES ($1, $2, $3, {NOW} + $4) "
            "ON CONFLICT (key) DO UPDATE SET owner = EXCLUDED.owner, settled = EXCLUDED.settled, "
            "expires = EXCLUDED.expires "
            f"WHERE claims.expires <= {NOW} OR (NOT claims.settled AND claims.owner <> $2 AND NOT EXISTS ("
            "  SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $5::oid"
            "  AND objid = claims.owner::oid AND objsubid = 2)) "
            "RETURNING key", key, OWNER, settled, float(ttl_s), LOCK_SPACE)
        return bool(rows)

    async def settle(self, *keys: str) -> None:
        if keys:
            await self._execute("UPDATE claims SET settled = TRUE WHERE key = ANY($1::text[]) AND owner = $2",
                                list(keys), OWNER)

    async def abandoned(self, prefix: str) -> list[str]:
        rows = await self._fetch(
            f"SELECT key FROM claims WHERE starts_with(key, $1) AND NOT settled AND expires > {NOW} "
            "AND owner <> $2 AND NOT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND classid = $3::oid AND objid = claims.owner::oid AND objsubid = 2) ORDER BY key",
            prefix, OWNER, LOCK_SPACE)
        return [r["key"] for r in rows]

    # ----------------------------------------------------------------- rate limits
    async def rate_hit(self, user_id: str, limit: int, window_s: float) -> float:
        await self._sweeper.maybe()
        wait = await self._run(lambda c: c.fetchval("SELECT askdesk_rate_hit($1, $2, $3)",
                                                    user_id, limit, float(window_s)))
        return max(0.001, float(wait)) if wait else 0.0

    # ----------------------------------------------------------------- feedback and records
    async def add_feedback(self, item: Feedback) -> None:
        await self._execute(
            "INSERT INTO feedback (created_at, surface, user_id, channel, thread, answer_id, rating, route, sources,"
            " question, comment) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
            item.created_at, item.surface, item.user_id, item.channel, item.thread, item.answer_id, item.rating,
            item.route, json.dumps(item.sources), item.question, item.comment)

    async def comment_feedback(self, answer_id: str, user_id: str, comment: str) -> None:
        await self._execute(
            "UPDATE feedback SET comment = $1 WHERE id = (SELECT max(id) FROM feedback WHERE answer_id = $2 AND "
            "user_id = $3)", comment, answer_id, user_id)

    async def recent_feedback(self, limit: int = 100) -> list[Feedback]:
        rows = await self._fetch(
            "SELECT rating, user_id, surface, channel, thread, answer_id, route, sources, question, created_at, comment "
            "FROM feedback ORDER BY id DESC LIMIT $1", limit)
        return [Feedback(**{**dict(r), "sources": json.loads(r["sources"])}) for r in rows]

    async def feedback(self, since: datetime) -> list[Feedback]:
        rows = await self._fetch(
            "SELECT rating, user_id, surface, channel, thread, answer_id, route, sources, question, created_at, comment "
            "FROM feedback WHERE created_at >= $1 ORDER BY id", since)
        return [Feedback(**{**dict(r), "sources": json.loads(r["sources"])}) for r in rows]

    async def remember_answer(self, record: AnswerRecord, *, conversation: str | None = None,
                              message_id: str | None = None) -> None:
        await self._execute(
            "INSERT INTO answer_records (answer_id, route, sources, question, conversation, message_id, created, asker,"
            f" is_private) VALUES ($1, $2, $3, $4, $5, $6, {NOW}, $7, $8) ON CONFLICT (answer_id) DO UPDATE SET "
            "route = EXCLUDED.route, sources = EXCLUDED.sources, question = EXCLUDED.question, "
            "conversation = EXCLUDED.conversation, message_id = EXCLUDED.message_id, created = EXCLUDED.created, "
            "asker = EXCLUDED.asker, is_private = EXCLUDED.is_private",
            record.answer_id, record.route, json.dumps(record.sources), record.question, conversation, message_id,
            record.asker, record.private)

    async def answer_record(self, answer_id: str) -> AnswerRecord | None:
        return _record(await self._fetch(
            f"SELECT {RECORD_COLUMNS} FROM answer_records WHERE answer_id = $1", answer_id))

    async def answer_by_message(self, conversation: str, message_id: str) -> AnswerRecord | None:
        return _record(await self._fetch(
            f"SELECT {RECORD_COLUMNS} FROM answer_records WHERE conversation = $1 AND message_id = $2 "
            "ORDER BY created DESC LIMIT 1", conversation, message_id))

    # ----------------------------------------------------------------- Teams thread askers
    async def remember_asker(self, conversation: str, asker: str) -> None:
        await self._execute(
            f"INSERT INTO teams_threads (conversation, asker, updated) VALUES ($1, $2, {NOW}) "
            "ON CONFLICT (conversation) DO UPDATE SET updated = EXCLUDED.updated", conversation, asker)

    async def asker(self, conversation: str) -> str | None:
        rows = await self._fetch("SELECT asker FROM teams_threads WHERE conversation = $1", conversation)
        return rows[0]["asker"] if rows else None

    # ----------------------------------------------------------------- the report's turns
    async def record_turn(self, turn: TurnRecord) -> None:
        await self._execute(
            "INSERT INTO turns (created, surface, outcome, route, answer_id, question, sources, latency_ms, llm_calls,"
            " overridden) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            turn.created_at.timestamp(), turn.surface, turn.outcome, turn.route, turn.answer_id, turn.question,
            json.dumps(turn.sources), float(turn.latency_ms), turn.llm_calls, turn.overridden)

    async def turns(self, since: datetime) -> list[TurnRecord]:
        from agent.state.sqlite import turn_of

        rows = await self._fetch(
            "SELECT created, surface, outcome, route, answer_id, question, sources, latency_ms, llm_calls, overridden"
            " FROM turns WHERE created >= $1 ORDER BY id", since.timestamp())
        return [turn_of(tuple(r)) for r in rows]

    async def citations(self, sources: list[str], since: datetime) -> list[Citation]:
        if not sources:
            return []
        rows = await self._fetch(
            "SELECT j.value, t.created, t.question FROM turns t, jsonb_array_elements_text(t.sources::jsonb) AS j(value)"
            " WHERE t.created >= $1 AND t.sources <> '[]' AND j.value = ANY($2::text[]) ORDER BY t.created, t.id",
            since.timestamp(), sources)
        return [Citation(source=r[0], created_at=datetime.fromtimestamp(r[1], timezone.utc), question=r[2])
                for r in rows]

    # ----------------------------------------------------------------- escalations
    async def save_escalation(self, item: Escalation) -> None:
        await self._execute(
            "INSERT INTO escalations (id, created, target_channel, target_thread, status, data)"
            " VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO UPDATE SET target_channel = EXCLUDED.target_channel,"
            " target_thread = EXCLUDED.target_thread, status = EXCLUDED.status, data = EXCLUDED.data",
            item.id, item.created_at.timestamp(), item.target_channel, item.target_thread, item.status,
            item.model_dump_json())

    async def escalation(self, escalation_id: str) -> Escalation | None:
        rows = await self._fetch("SELECT data FROM escalations WHERE id = $1", escalation_id)
        return Escalation.model_validate_json(rows[0]["data"]) if rows else None

    async def escalation_in_thread(self, channel: str, thread: str) -> Escalation | None:
        rows = await self._fetch("SELECT data FROM escalations WHERE target_channel = $1 AND target_thread = $2",
                                 channel, thread)
        return Escalation.model_validate_json(rows[0]["data"]) if rows else None

    async def answer_escalation(self, escalation_id: str, *, expert_id: str, expert_name: str | None,
                                text: str) -> Escalation | None:
        rows = await self._fetch(
            "UPDATE escalations SET status = 'answered', data = (data::jsonb || jsonb_build_object("
            "'status', 'answered', 'expert_id', $2::text, 'expert_name', $3::text, 'expert_answer', $4::text,"
            " 'answered_at', $5::text))::text WHERE id = $1 AND status = 'open' RETURNING data",
            escalation_id, expert_id, expert_name, text, utcnow().isoformat())
        return Escalation.model_validate_json(rows[0]["data"]) if rows else None

    async def escalations(self, since: datetime) -> list[Escalation]:
        rows = await self._fetch("SELECT data FROM escalations WHERE created >= $1 ORDER BY created",
                                 since.timestamp())
        return [Escalation.model_validate_json(r["data"]) for r in rows]

    # ----------------------------------------------------------------- retention
    async def forget_before(self, when: datetime) -> dict[str, int]:
        cut = when.timestamp()
        counts: dict[str, int] = {}
        for table, sql, param in (("messages", "DELETE FROM messages WHERE created < $1 RETURNING 1", cut),
                                  ("turns", "DELETE FROM turns WHERE created < $1 RETURNING 1", cut),
                                  ("feedback", "DELETE FROM feedback WHERE created_at < $1 RETURNING 1", when),
                                  ("escalations", "DELETE FROM escalations WHERE created < $1 RETURNING 1", cut)):
            counts[table] = len(await self._fetch(sql, param))
        return counts

    # ----------------------------------------------------------------- bounded tables
    async def _sweep(self) -> None:
        if self.retention_days > 0:
            await self.forget_before(utcnow() - timedelta(days=self.retention_days))
        await self._execute(f"DELETE FROM claims WHERE expires <= {NOW}")
        await self._execute(f"DELETE FROM rate_hits WHERE at <= {NOW} - $1", RATE_WINDOW_KEPT_S)
        await self._execute(f"DELETE FROM answer_records WHERE created <= {NOW} - $1", RECORD_DAYS * 86400.0)


RECORD_COLUMNS = "answer_id, route, sources, question, asker, is_private"


def _record(rows: list) -> AnswerRecord | None:
    if not rows:
        return None
    r = rows[0]
    return AnswerRecord(answer_id=r["answer_id"], route=r["route"], sources=json.loads(r["sources"]),
                        question=r["question"], asker=r["asker"], private=bool(r["is_private"]))
