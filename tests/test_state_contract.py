"""The state-store contract, per role (agent/state/base.py), run on every backend that serves the
role: in-process memory, SQLite (the embedded default) and PostgreSQL (a server this test run
starts: tests/postgres_server.py)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3

import asyncpg
import pytest

from agent.messages import ChatMessage
from datetime import datetime, timedelta, timezone

from agent.state import AnswerRecord, Guarded, StateUnavailable
from agent.state.base import (
    OWNER,
    ROLES,
    AnswerRecords,
    Askers,
    Claims,
    Escalation,
    Escalations,
    FeedbackLog,
    Lifecycle,
    Memory,
    RateLimits,
    Retention,
    StateStore,
    TurnLog,
    TurnRecord,
)
from agent.state.feedback import Feedback
from agent.state.memory import MemoryState
from agent.state.migrations import LATEST, LOCK_SPACE
from agent.state.postgres import PostgresState
from agent.state.sqlite import SQLiteState

BACKENDS: dict[str, type] = {"memory": MemoryState, "sqlite": SQLiteState, "postgres": PostgresState}


def serving(*roles: type):
    """Run the test on every backend whose class declares all of `roles` (agent/state/base.py)."""
    names = [name for name, cls in BACKENDS.items() if all(role in cls.__mro__ for role in roles)]
    assert names, f"no backend serves {[r.__name__ for r in roles]}"
    label = "+".join(r.__name__ for r in roles)
    return pytest.mark.parametrize("state", names, indirect=True, ids=[f"{label}-{n}" for n in names])


def role_methods(role: type) -> set[str]:
    """The methods a role protocol declares itself (not those of the roles it extends)."""
    return {name for name, value in vars(role).items() if callable(value) and not name.startswith("_")}


def test_the_roles_split_the_store_and_every_method_of_a_backend_belongs_to_one():
    declared = [role_methods(role) for role in ROLES]
    assert sum(len(m) for m in declared) == len(set().union(*declared))  # no method in two roles
    every = set().union(*declared, role_methods(Lifecycle))
    assert every == {n for n in dir(StateStore) if not n.startswith("_") and callable(getattr(StateStore, n))}
    for cls in [*BACKENDS.values(), Guarded]:
        public = {n for n, v in vars(cls).items() if callable(v) and not n.startswith("_")}
        assert public - every == set(), f"{cls.__name__}: methods of no role"
        served = [role for role in ROLES if role in cls.__mro__]
        missing = {n for role in served for n in role_methods(role)} - public
        assert missing == set(), f"{cls.__name__} declares roles it does not implement: {missing}"


@pytest.fixture
async def state(request, tmp_path):
    if request.param == "memory":
        store = MemoryState(max_messages=3)
    elif request.param == "sqlite":
        store = SQLiteState(tmp_path / "state.sqlite", max_messages=3)
    else:
        store = PostgresState(request.getfixturevalue("postgres_url"), max_messages=3)
    await store.open()
    yield store
    await store.close()


def msg(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=role, content=text)


@serving(Memory)
async def test_conversations_are_kept_per_surface_and_thread_newest_last(state):
    await state.append("teams", "t1", [msg("user", "q1"), msg("assistant", "a1")])
    await state.append("cli", "t1", [msg("user", "other surface")])
    await state.append("teams", "t1", [msg("user", "q2"), msg("assistant", "a2")])
    history = (await state.load("teams", "t1")).messages
    assert [(m.role, m.content) for m in history] == [("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    assert [m.content for m in (await state.load("cli", "t1")).messages] == ["other surface"]
    assert (await state.load("teams", "t2")).messages == []


@serving(Claims)
async def test_a_claim_is_granted_once_until_it_expires(state):
    assert await state.claim("slack:event:Ev1", 0.3)
    assert not await state.claim("slack:event:Ev1", 0.3)  # a retry while the first is at work
    assert await state.claim("slack:event:Ev2", 0.3)  # keys are separate
    await state.settle("slack:event:Ev1")
    assert not await state.claim("slack:event:Ev1", 0.3)  # done: still not again
    await asyncio.sleep(0.35)
    assert await state.claim("slack:event:Ev1", 0.3)  # expired: the table does not hold keys forever


@serving(Claims)
async def test_concurrent_claims_of_one_key_grant_exactly_one(state):
    granted = await asyncio.gather(*(state.claim("teams:activity:c:1", 60) for _ in range(20)))
    assert sum(granted) == 1


@serving(Claims)
async def test_claims_of_a_live_holder_are_never_abandoned(state):
    assert await state.claim("slack:stream:1", 60)  # this process is at work on it
    assert await state.claim("slack:stream:2", 60, settled=True)
    assert await state.abandoned("slack:stream:") == []


@serving(RateLimits)
async def test_rate_limit_counts_within_the_window_and_reports_the_wait(state):
    assert await state.rate_hit("U1", 2, 0.5) == 0
    assert await state.rate_hit("U1", 2, 0.5) == 0
    wait = await state.rate_hit("U1", 2, 0.5)
    assert 0 < wait <= 0.5
    assert await state.rate_hit("U2", 2, 0.5) == 0  # per user
    await asyncio.sleep(wait + 0.05)
    assert await state.rate_hit("U1", 2, 0.5) == 0  # the oldest left the window


@serving(FeedbackLog)
async def test_feedback_is_stored_and_read_newest_first(state):
    await state.add_feedback(Feedback(rating="up", user_id="U1", surface="teams", channel="C1", thread="t",
                                      answer_id="a1", route="knowledge", sources=["a.md", "b.md"]))
    await state.add_feedback(Feedback(rating="down", user_id="U2", question="why?"))
    newest, oldest = await state.recent_feedback()
    assert (newest.rating, newest.user_id, newest.question) == ("down", "U2", "why?")
    assert (oldest.surface, oldest.channel, oldest.thread, oldest.answer_id, oldest.route, oldest.sources) == (
        "teams", "C1", "t", "a1", "knowledge", ["a.md", "b.md"])
    assert oldest.created_at <= newest.created_at


@serving(AnswerRecords)
async def test_answer_records_are_found_by_id_and_by_message_within_its_conversation(state):
    first = AnswerRecord(answer_id="a1", route="knowledge", sources=["x.md"], question="q1", asker="U1")
    second = AnswerRecord(answer_id="a2", route="facility", sources=[], asker="29:user", private=True)
    await state.remember_answer(first, conversation="conv-1", message_id="1")
    await state.remember_answer(second, conversation="conv-2", message_id="1")  # same id, other conversation
    assert await state.answer_record("a1") == first
    assert await state.answer_by_message("conv-2", "1") == second
    assert await state.answer_by_message("conv-1", "1") == first
    assert await state.answer_record("nope") is None and await state.answer_by_message("conv-3", "1") is None


@serving(Askers)
async def test_the_first_asker_keeps_a_thread(state):
    await state.remember_asker("19:chan;messageid=1", "29:ada")
    await state.remember_asker("19:chan;messageid=1", "29:bob")
    assert await state.asker("19:chan;messageid=1") == "29:ada"
    assert await state.asker("19:other") is None


@serving(FeedbackLog)
async def test_feedback_keeps_the_comment_written_with_it(state):
    await state.add_feedback(Feedback(rating="down", user_id="U1", comment="the dates are from last year"))
    [row] = await state.recent_feedback()
    assert row.comment == "the dates are from last year"


@serving(FeedbackLog)
async def test_a_comment_written_after_the_rating_goes_with_the_latest_feedback(state):
    await state.add_feedback(Feedback(rating="down", user_id="U1", answer_id="a1"))
    await state.add_feedback(Feedback(rating="down", user_id="U2", answer_id="a1"))
    await state.add_feedback(Feedback(rating="down", user_id="U1", answer_id="a2"))
    await state.comment_feedback("a1", "U1", "outdated")
    await state.comment_feedback("a9", "U1", "no such answer: nothing changes")
    rows = await state.recent_feedback()
    assert [(f.user_id, f.answer_id, f.comment) for f in rows] == [
        ("U1", "a2", None), ("U2", "a1", None), ("U1", "a1", "outdated")]


@serving(FeedbackLog)
async def test_feedback_is_read_back_from_a_moment_on(state):
    now = datetime.now(timezone.utc)
    await state.add_feedback(Feedback(rating="up", user_id="U1", created_at=now - timedelta(days=10)))
    await state.add_feedback(Feedback(rating="down", user_id="U2", created_at=now - timedelta(hours=1), question="q"))
    await state.add_feedback(Feedback(rating="up", user_id="U3", created_at=now))
    recent = await state.feedback(now - timedelta(days=1))
    assert [(f.user_id, f.rating) for f in recent] == [("U2", "down"), ("U3", "up")]
    assert recent[0].question == "q"


@serving(TurnLog)
async def test_turns_are_read_back_from_a_moment_on(state):
    old = datetime.now(timezone.utc) - timedelta(days=10)
    await state.record_turn(TurnRecord(created_at=old, surface="slack", outcome="answered"))
    await state.record_turn(TurnRecord(surface="teams", outcome="unanswerable", route="knowledge", answer_id="a1",
                                       question="parking at the depot?", sources=["a.md"], latency_ms=812.5,
                                       llm_calls=2, overridden=True))
    [recent] = await state.turns(datetime.now(timezone.utc) - timedelta(days=7))
    assert (recent.surface, recent.outcome, recent.route, recent.answer_id, recent.question, recent.sources,
            recent.latency_ms, recent.llm_calls, recent.overridden) == ("teams", "unanswerable", "knowledge", "a1",
                                                                        "parking at the depot?", ["a.md"], 812.5, 2,
                                                                        True)
    turns = await state.turns(old - timedelta(seconds=1))
    assert len(turns) == 2 and not turns[0].overridden


@serving(Escalations)
async def test_an_escalation_is_found_by_its_thread_and_answered_once(state):
    item = Escalation(id="e1", surface="slack", asker="U1", conversation="C1", thread="1.0", question="q?",
                      attempt="not found", sources=["a.md"], target_surface="slack", target_channel="CESC")
    await state.save_escalation(item)
    assert await state.escalation_in_thread("CESC", "9.9") is None
    await state.save_escalation(item.model_copy(update={"target_thread": "9.9"}))  # posted: its thread is known
    assert (await state.escalation_in_thread("CESC", "9.9")).id == "e1"
    replies = await asyncio.gather(*(state.answer_escalation("e1", expert_id=f"U{i}", expert_name=f"Expert {i}",
                                                             text=f"answer {i}") for i in range(5)))
    [first] = [r for r in replies if r is not None]  # one reply wins, however many arrive together
    assert first.status == "answered" and first.expert_answer.startswith("answer ") and first.answered_at
    stored = await state.escalation("e1")
    assert (stored.expert_id, stored.expert_answer, stored.question) == (first.expert_id, first.expert_answer, "q?")
    assert [e.id for e in await state.escalations(datetime.now(timezone.utc) - timedelta(hours=1))] == ["e1"]


@serving(Retention, TurnLog, FeedbackLog, Escalations)
async def test_forgetting_before_a_date_deletes_what_people_wrote_before_it(state):
    old = datetime.now(timezone.utc) - timedelta(days=200)
    await state.record_turn(TurnRecord(created_at=old, surface="slack", outcome="unanswerable", question="old q"))
    await state.record_turn(TurnRecord(surface="slack", outcome="answered"))
    await state.add_feedback(Feedback(rating="down", user_id="U1", question="old q", created_at=old))
    await state.add_feedback(Feedback(rating="up", user_id="U2"))
    await state.save_escalation(Escalation(id="old", created_at=old, surface="slack", asker="U1", conversation="C1",
                                           question="old q", target_surface="slack", target_channel="CESC"))
    deleted = await state.forget_before(datetime.now(timezone.utc) - timedelta(days=180))
    assert (deleted["turns"], deleted["feedback"], deleted["escalations"]) == (1, 1, 1)
    since = datetime.now(timezone.utc) - timedelta(days=365)
    assert [t.outcome for t in await state.turns(since)] == ["answered"]
    assert [f.user_id for f in await state.recent_feedback()] == ["U2"]
    assert await state.escalation("old") is None


# ----------------------------------------------------------------- a holder that died


async def test_sqlite_claim_of_a_dead_process_is_taken_over_but_a_settled_one_is_not(tmp_path):
    path = tmp_path / "state.sqlite"
    state = SQLiteState(path)
    await state.open()
    dead_pid = 2 ** 22 + 12345  # above the default pid_max: no such process
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO claims VALUES ('in-flight', 7, ?, 0, 1e12)", (dead_pid,))
        db.execute("INSERT INTO claims VALUES ('answered', 7, ?, 1, 1e12)", (dead_pid,))
        db.execute("INSERT INTO claims VALUES ('alive', 7, 1, 0, 1e12)")  # pid 1 runs
    assert await state.claim("in-flight", 60)
    assert not await state.claim("answered", 60)
    assert not await state.claim("alive", 60)
    await state.close()


async def test_postgres_claim_of_a_replica_that_disconnected_is_taken_over(postgres_url):
    state = PostgresState(postgres_url)
    await state.open()
    other = OWNER + 1 if OWNER < 2 ** 31 - 1 else OWNER - 1
    replica = await asyncpg.connect(postgres_url)  # the other replica, present while connected
    await replica.execute("SELECT pg_advisory_lock($1, $2)", LOCK_SPACE, other)
    await replica.execute("INSERT INTO claims VALUES ('in-flight', $1, false, 1e12), ('answered', $1, true, 1e12)",
                          other)
    assert not await state.claim("in-flight", 60)  # its holder is at work
    await replica.close()  # what kill -9 does to its connection
    assert await state.claim("in-flight", 60)
    assert not await state.claim("answered", 60)  # settled: answered already
    await state.close()


# ----------------------------------------------------------------- schema versions


async def test_a_sqlite_file_from_before_schema_versions_is_upgraded_keeping_its_rows(tmp_path):
    path = tmp_path / "askdesk.sqlite"
    with sqlite3.connect(path) as db:  # what askdesk wrote before this version
        db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY AUTOINCREMENT, conversation TEXT NOT NULL,"
                   " role TEXT NOT NULL, content TEXT NOT NULL, created REAL NOT NULL)")
        db.execute("INSERT INTO messages (conversation, role, content, created) VALUES ('teams:t', 'user', 'old', 1)")
        db.execute("CREATE TABLE teams_threads (conversation TEXT PRIMARY KEY, asker TEXT NOT NULL,"
                   " updated REAL NOT NULL)")
        db.execute("INSERT INTO teams_threads VALUES ('c', 'u', 1)")
    state = SQLiteState(path)
    assert [m.content for m in (await state.load("teams", "t")).messages] == ["old"]
    assert await state.asker("c") == "u"
    assert await state.claim("new-table", 60)
    await state.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == LATEST


async def test_replicas_starting_together_migrate_a_postgres_database_once(postgres_url, caplog):
    caplog.set_level(logging.INFO, logger="askdesk.state")
    replicas = [PostgresState(postgres_url) for _ in range(4)]
    await asyncio.gather(*(r.open() for r in replicas))
    applied = [r.getMessage() for r in caplog.records if "applied schema version" in r.getMessage()]
    assert len(applied) == LATEST  # each version once, not once per replica
    conn = await asyncpg.connect(postgres_url)
    assert await conn.fetch("SELECT version FROM askdesk_schema") == [(LATEST,)]
    await conn.close()
    for r in replicas:
        await r.close()


# ----------------------------------------------------------------- faults


async def test_postgres_unreachable_at_start_is_one_line_without_the_password():
    from tests.postgres_server import free_port

    state = PostgresState(f"postgresql://bot:s3cret@127.0.0.1:{free_port()}/askdesk", timeout=2)
    with pytest.raises(StateUnavailable) as caught:
        await state.open()
    message = str(caught.value)
    assert "cannot reach PostgreSQL at 127.0.0.1:" in message and "/askdesk" in message
    assert "s3cret" not in message and "\n" not in message


async def test_a_database_restart_is_survived_on_new_connections(postgres_server, postgres_url):
    state = PostgresState(postgres_url)
    await state.append("teams", "t", [msg("user", "before")])
    postgres_server.restart()  # every pooled connection is now broken
    await state.append("teams", "t", [msg("user", "after")])
    assert [m.content for m in (await state.load("teams", "t")).messages] == ["before", "after"]
    await state.close()


async def test_the_database_going_down_mid_turn_degrades_and_is_logged_once(postgres_url, caplog):
    from tests.postgres_server import free_port

    guarded = Guarded(PostgresState(postgres_url))
    await guarded.open()
    await guarded.inner.close()
    guarded.inner.url = f"postgresql://askdesk@127.0.0.1:{free_port()}/gone"  # nothing listens there now
    guarded.inner.timeout = 1
    caplog.set_level(logging.INFO)
    assert await guarded.claim("k", 60)  # answer rather than drop the question
    assert await guarded.rate_hit("U1", 1, 60) == 0
    assert (await guarded.load("teams", "t")).messages == []
    await guarded.append("teams", "t", [msg("user", "lost")])
    await guarded.add_feedback(Feedback(rating="up", user_id="U1"))
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage(), [r.getMessage() for r in warnings]
    assert not any(r.exc_info for r in caplog.records)
    guarded.inner.url = postgres_url
    assert await guarded.claim("k2", 60)
    assert "is back" in caplog.records[-1].getMessage()
    await guarded.close()
