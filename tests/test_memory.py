"""Conversation memory: newest history kept within the budget, threads never mix, SQLite persists."""

from __future__ import annotations

from agent.state.conversation import trim_history
from agent.state.sqlite import SQLiteState
from agent.messages import ChatMessage


def msg(role: str, text: str) -> ChatMessage:
    return ChatMessage(role=role, content=text)


def test_trim_keeps_newest_messages_within_budget_in_order():
    history = [msg("user", "a" * 40), msg("assistant", "b" * 40), msg("user", "c" * 30), msg("assistant", "d" * 20)]
    kept = trim_history(history, 60)
    assert [m.content[0] for m in kept] == ["c", "d"]
    assert sum(len(m.content) for m in kept) <= 60
    assert trim_history(history, 1000) == history
    assert trim_history(history, 0) == []


def test_trim_cuts_an_oversized_newest_message_instead_of_dropping_everything():
    kept = trim_history([msg("user", "old"), msg("user", "x" * 50 + "TAIL")], 10)
    assert len(kept) == 1 and kept[0].content.endswith("TAIL") and len(kept[0].content) == 10


def test_long_answers_are_cut_before_the_threads_first_question_is_dropped():
    """Two search-only answers with whole sections used to fill the budget, so a follow-up lost the
    question it leans on ("which providers are left out of it?" anchored on "who runs it?")."""
    history = [msg("user", "how often is the market rate survey done?"), msg("assistant", "A" * 5000),
               msg("user", "who runs it?"), msg("assistant", "B" * 5000)]
    kept = trim_history(history, 6000)
    assert [m.content for m in kept if m.role == "user"] == ["how often is the market rate survey done?", "who runs it?"]
    assert all(len(m.content) <= 2002 and m.content.startswith(("A", "B")) for m in kept if m.role == "assistant")


async def test_sqlite_store_isolates_threads_and_surfaces_and_persists(tmp_path):
    path = tmp_path / "memory.sqlite"
    store = SQLiteState(path)
    await store.append("cli", "t1", [msg("user", "q1"), msg("assistant", "a1")])
    await store.append("cli", "t2", [msg("user", "other thread")])
    await store.append("teams", "t1", [msg("user", "other surface")])
    await store.append("cli", "t1", [msg("user", "q2")])
    await store.close()

    reopened = SQLiteState(path)
    conv = await reopened.load("cli", "t1")
    assert conv.key == "cli:t1"
    assert [(m.role, m.content) for m in conv.messages] == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
    assert [m.content for m in (await reopened.load("cli", "t2")).messages] == ["other thread"]
    assert [m.content for m in (await reopened.load("teams", "t1")).messages] == ["other surface"]
    assert (await reopened.load("cli", "unknown")).messages == []
    await reopened.close()


async def test_sqlite_store_reads_only_the_newest_messages(tmp_path):
    store = SQLiteState(tmp_path / "m.sqlite", max_messages=3)
    await store.append("cli", "t", [msg("user", str(i)) for i in range(10)])
    conv = await store.load("cli", "t")
    assert [m.content for m in conv.messages] == ["7", "8", "9"]
    assert [m.content for m in conv.trimmed(2)] == ["8", "9"]
    await store.close()


async def test_concurrent_first_use_opens_one_connection_and_leaks_no_thread(tmp_path):
    """Twenty questions arriving together all make the store's first call at once: each must
    see the schema, and only one connection (one worker thread) may be opened, or the
    leftover non-daemon threads keep the process from ever exiting."""
    import asyncio
    import threading

    before = set(threading.enumerate())
    store = SQLiteState(tmp_path / "memory.sqlite")
    askers = SQLiteState(tmp_path / "threads.sqlite")

    async def turn(i: int) -> None:
        await store.load("cli", f"t{i}")
        await store.append("cli", f"t{i}", [msg("user", f"q{i}")])
        await askers.remember_asker(f"c{i}", f"u{i}")

    await asyncio.gather(*(turn(i) for i in range(20)))
    assert [m.content for m in (await store.load("cli", "t7")).messages] == ["q7"]
    assert await askers.asker("c3") == "u3"
    opened = [t for t in threading.enumerate() if t not in before]
    assert len(opened) == 2, opened  # one connection per store
    await store.close()
    await askers.close()
    for t in opened:
        t.join(timeout=5)
    assert not any(t.is_alive() for t in opened)
