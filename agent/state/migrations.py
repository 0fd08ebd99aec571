"""Schema versions of the state store, for both backends, applied in order at start-up.

A database records the last version applied (SQLite: `PRAGMA user_version`; PostgreSQL: the
`askdesk_schema` table). Opening the store applies every newer migration in ONE transaction
holding the database's write lock (SQLite `BEGIN IMMEDIATE`; PostgreSQL an advisory lock), so
two replicas starting at once migrate once: the second waits, then finds nothing to do.
Migrations only add (tables, columns, indexes): a replica still running the previous version
keeps working against the upgraded schema during a rolling deploy. Version 1 adopts the files
written before versions existed (its tables are created only if missing).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

log = logging.getLogger("askdesk.state")

LOCK_SPACE = 0x61736B64  # 'askd': the advisory-lock key space of askdesk (key 0: migrations)


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    sqlite: tuple[str, ...]
    postgres: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "conversation memory, feedback, Teams thread askers", sqlite=(
        "CREATE TABLE IF NOT EXISTS messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation TEXT NOT NULL,"
        " role TEXT NOT NULL, content TEXT NOT NULL, created REAL NOT NULL)",
        "CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation, id)",
        "CREATE TABLE IF NOT EXISTS feedback (id INTEGER PRIMARY KEY AUTOINCREMENT, created_at TEXT NOT NULL,"
        " surface TEXT NOT NULL, user_id TEXT NOT NULL, channel TEXT, thread TEXT, answer_id TEXT,"
        " rating TEXT NOT NULL CHECK (rating IN ('up', 'down')), route TEXT, sources TEXT NOT NULL DEFAULT '[]',"
        " question TEXT)",
        "CREATE TABLE IF NOT EXISTS teams_threads (conversation TEXT PRIMARY KEY, asker TEXT NOT NULL,"
        " updated REAL NOT NULL)",
    ), postgres=(
        "CREATE TABLE IF NOT EXISTS messages (id BIGSERIAL PRIMARY KEY, conversation TEXT NOT NULL,"
        " role TEXT NOT NULL, content TEXT NOT NULL, created DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX IF NOT EXISTS messages_conversation ON messages (conversation, id)",
        "CREATE TABLE IF NOT EXISTS feedback (id BIGSERIAL PRIMARY KEY, created_at TIMESTAMPTZ NOT NULL,"
        " surface TEXT NOT NULL, user_id TEXT NOT NULL, channel TEXT, thread TEXT, answer_id TEXT,"
        " rating TEXT NOT NULL CHECK (rating IN ('up', 'down')), route TEXT, sources TEXT NOT NULL DEFAULT '[]',"
        " question TEXT)",
        "CREATE TABLE IF NOT EXISTS teams_threads (conversation TEXT PRIMARY KEY, asker TEXT NOT NULL,"
        " updated DOUBLE PRECISION NOT NULL)",
    )),
    Migration(2, "exactly-once claims, rate limits, answer records", sqlite=(
        "CREATE TABLE claims (key TEXT PRIMARY KEY, owner INTEGER NOT NULL, pid INTEGER NOT NULL,"
        " settled INTEGER NOT NULL, expires REAL NOT NULL)",
        "CREATE INDEX claims_expires ON claims (expires)",
        "CREATE TABLE rate_hits (user_id TEXT NOT NULL, at REAL NOT NULL)",
        "CREATE INDEX rate_hits_user ON rate_hits (user_id, at)",
        "CREATE TABLE answer_records (answer_id TEXT PRIMARY KEY, route TEXT NOT NULL, sources TEXT NOT NULL,"
        " question TEXT, conversation TEXT, message_id TEXT, created REAL NOT NULL)",
        "CREATE INDEX answer_records_message ON answer_records (conversation, message_id)",
    ), postgres=(
        "CREATE TABLE claims (key TEXT PRIMARY KEY, owner INTEGER NOT NULL, settled BOOLEAN NOT NULL,"
        " expires DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX claims_expires ON claims (expires)",
        "CREATE TABLE rate_hits (user_id TEXT NOT NULL, at DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX rate_hits_user ON rate_hits (user_id, at)",
        "CREATE TABLE answer_records (answer_id TEXT PRIMARY KEY, route TEXT NOT NULL, sources TEXT NOT NULL,"
        " question TEXT, conversation TEXT, message_id TEXT, created DOUBLE PRECISION NOT NULL)",
        "CREATE INDEX answer_records_message ON answer_records (conversation, message_id)",
        # one round trip, atomic per user across replicas (the advisory lock serialises one user's hits)
        """CREATE OR REPLACE FUNCTION askdesk_rate_hit(p_user TEXT, p_limit INTEGER, p_window DOUBLE PRECISION)
        RETURNS DOUBLE PRECISION LANGUAGE plpgsql AS $$
        DECLARE
            t DOUBLE PRECISION := extract(epoch FROM clock_timestamp());
            n INTEGER;
            oldest DOUBLE PRECISION;
        BEGIN
            PERFORM pg_advisory_xact_lock(hashtext('askdesk-rate:' || p_user));
            DELETE FROM rate_hits WHERE user_id = p_user AND at <= t - p_window;
            SELECT count(*), min(at) INTO n, oldest FROM rate_hits WHERE user_id = p_user;
            IF n >= p_limit THEN
                RETURN oldest + p_window - t;
            END IF;
            INSERT INTO rate_hits (user_id, at) VALUES (p_user, t);
            RETURN 0;
        END $$""",
    )),
)

MIGRATIONS += (
    Migration(3, "turns for the knowledge-gap report, escalations, feedback comments", sqlite=(
        "ALTER TABLE feedback ADD COLUMN comment TEXT",
        "CREATE TABLE turns (id INTEGER PRIMARY KEY AUTOINCREMENT, created REAL NOT NULL, surface TEXT NOT NULL,"
        " outcome TEXT NOT NULL, route TEXT, answer_id TEXT, question TEXT, sources TEXT NOT NULL,"
        " latency_ms REAL NOT NULL, llm_calls INTEGER NOT NULL)",
        "CREATE INDEX turns_created ON turns (created)",
        "CREATE TABLE escalations (id TEXT PRIMARY KEY, created REAL NOT NULL, target_channel TEXT NOT NULL,"
        " target_thread TEXT, status TEXT NOT NULL, data TEXT NOT NULL)",
        "CREATE INDEX escalations_thread ON escalations (target_channel, target_thread)",
    ), postgres=(
        "ALTER TABLE feedback ADD COLUMN comment TEXT",
        "CREATE TABLE turns (id BIGSERIAL PRIMARY KEY, created DOUBLE PRECISION NOT NULL, surface TEXT NOT NULL,"
        " outcome TEXT NOT NULL, route TEXT, answer_id TEXT, question TEXT, sources TEXT NOT NULL,"
        " latency_ms DOUBLE PRECISION NOT NULL, llm_calls INTEGER NOT NULL)",
        "CREATE INDEX turns_created ON turns (created)",
        "CREATE TABLE escalations (id TEXT PRIMARY KEY, created DOUBLE PRECISION NOT NULL,"
        " target_channel TEXT NOT NULL, target_thread TEXT, status TEXT NOT NULL, data TEXT NOT NULL)",
        "CREATE INDEX escalations_thread ON escalations (target_channel, target_thread)",
    )),
)

MIGRATIONS += (
    Migration(4, "turns: refusals the asker overrode", sqlite=(
        "ALTER TABLE turns ADD COLUMN overridden INTEGER NOT NULL DEFAULT 0",
    ), postgres=(
        "ALTER TABLE turns ADD COLUMN overridden BOOLEAN NOT NULL DEFAULT FALSE",
    )),
)

MIGRATIONS += (
    Migration(5, "answer records: who asked, and whether the answer was private", sqlite=(
        "ALTER TABLE answer_records ADD COLUMN asker TEXT",
        "ALTER TABLE answer_records ADD COLUMN is_private INTEGER NOT NULL DEFAULT 0",
    ), postgres=(
        "ALTER TABLE answer_records ADD COLUMN asker TEXT",
        "ALTER TABLE answer_records ADD COLUMN is_private BOOLEAN NOT NULL DEFAULT FALSE",
    )),
)

LATEST = MIGRATIONS[-1].version


def pending(current: int) -> list[Migration]:
    """The migrations a database at version `current` still needs (a newer database: none)."""
    if current > LATEST:
        log.warning("the state database is at schema version %d, newer than this askdesk (%d): running with it",
                    current, LATEST)
    return [m for m in MIGRATIONS if m.version > current]


async def migrate_sqlite(db) -> int:
    """Bring an aiosqlite connection (autocommit mode) to LATEST; returns the version found."""
    async def run(sql: str) -> None:
        async with db.execute(sql):  # the cursor is closed on the connection's own thread
            pass

    await run("BEGIN IMMEDIATE")  # the write lock: a second process waits here
    try:
        async with db.execute("PRAGMA user_version") as cursor:
            (current,) = await cursor.fetchone()
        for migration in pending(current):
            for statement in migration.sqlite:
                await run(statement)
            log.info("state store: applied schema version %d (%s)", migration.version, migration.name)
        if current < LATEST:
            await run(f"PRAGMA user_version = {LATEST:d}")
        await run("COMMIT")
    except BaseException:
        await run("ROLLBACK")
        raise
    return current


async def migrate_postgres(conn) -> int:
    """Bring an asyncpg connection's database to LATEST; returns the version found."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1, 0)", LOCK_SPACE)
        await conn.execute("CREATE TABLE IF NOT EXISTS askdesk_schema (version INTEGER NOT NULL)")
        current = await conn.fetchval("SELECT max(version) FROM askdesk_schema") or 0
        for migration in pending(current):
            for statement in migration.postgres:
                await conn.execute(statement)
            log.info("state store: applied schema version %d (%s)", migration.version, migration.name)
        if current < LATEST:
            await conn.execute("DELETE FROM askdesk_schema")
            await conn.execute("INSERT INTO askdesk_schema (version) VALUES ($1)", LATEST)
    return current
