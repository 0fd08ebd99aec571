"""The admin channel's edges: a data dir whose path is too long for a Unix socket, clients that
connect and say nothing, and many of them at once. Before: a data-dir path over ~100
characters silently disabled the channel and `askdesk ingest` exited 3 claiming ingest "is
handed to it automatically"; 3,000 idle clients held 3,013 descriptors in the bot."""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest

from agent.config import Settings
from agent.runtime import Runtime
from agent.store.lock import read_holder, record_holder
from bot.admin import SOCKET_NAME
from bot.admin.channel import BUSY, AdminChannel
from tests.conftest import SAMPLE_KB, seed_embeddings
from tests.test_store_concurrency import EXIT_IN_USE, cli_env, run_cli

DOC = "bcy2025-psoc-chart-twc-qa.md"


@pytest.fixture
def short_dir():
    """A private folder with a short path: the runtime dirs under test must fit a socket's
    108-character limit whatever pytest's tmp_path looks like (longer under pytest-xdist)."""
    path = Path(tempfile.mkdtemp(prefix="ad", dir="/tmp"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def long_data_dir(tmp_path):
    return tmp_path / ("a-data-directory-whose-path-is-far-too-long-for-a-unix-socket-" * 2) / "data"


def _mode(path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


async def test_a_long_data_dir_gets_its_socket_in_a_private_runtime_dir(tmp_path, short_dir, monkeypatch):
    """`askdesk ingest` (the real console script) finds the bot through the lock file."""
    runtime_dir = short_dir / "run"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    data = seed_embeddings(long_data_dir(tmp_path))
    assert len(str(data / SOCKET_NAME)) > 108
    runtime = Runtime.open(Settings(data_dir=data))
    channel = await AdminChannel.start(Settings(data_dir=data), runtime)
    try:
        assert channel is not None and channel.path.parent == runtime_dir / "askdesk"
        assert _mode(channel.path.parent) == 0o700 and _mode(channel.path) == 0o600
        assert read_holder(data)["admin_socket"] == str(channel.path)
        code, out, err = await run_cli(["ingest", str(SAMPLE_KB / DOC), "--json"], cli_env(data), timeout=240)
    finally:
        if channel is not None:
            await channel.close()
        await runtime.close()
    assert code == 0 and "the running bot" in err and f'"{DOC}"' in out, err
    assert not channel.path.exists() and "admin_socket" not in read_holder(data)


async def test_without_xdg_runtime_dir_the_socket_goes_in_a_private_temp_dir(tmp_path, short_dir, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(short_dir))
    data = long_data_dir(tmp_path)
    runtime = Runtime.open(Settings(data_dir=data))
    channel = await AdminChannel.start(Settings(data_dir=data), runtime)
    try:
        assert channel is not None and channel.path.parent == short_dir / f"askdesk-{os.getuid()}"
        assert _mode(channel.path.parent) == 0o700
    finally:
        if channel is not None:
            await channel.close()
        await runtime.close()


async def test_a_loose_runtime_dir_is_tightened_and_a_planted_link_refused(tmp_path, short_dir, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(short_dir))
    (short_dir / f"askdesk-{os.getuid()}").mkdir(mode=0o777)
    os.chmod(short_dir / f"askdesk-{os.getuid()}", 0o777)
    data = long_data_dir(tmp_path)
    runtime = Runtime.open(Settings(data_dir=data))
    channel = await AdminChannel.start(Settings(data_dir=data), runtime)
    try:
        assert channel is not None and _mode(channel.path.parent) == 0o700  # ours: tightened
    finally:
        if channel is not None:
            await channel.close()
        await runtime.close()
    (short_dir / f"askdesk-{os.getuid()}").rename(short_dir / "moved")  # a link where the dir would be
    os.symlink(short_dir / "moved", short_dir / f"askdesk-{os.getuid()}")
    from bot.admin.location import socket_path

    assert socket_path(data) is None


async def test_when_no_socket_fits_the_bot_says_so_once_and_ingest_tells_the_truth(tmp_path, monkeypatch, caplog):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    long_tmp = tmp_path / ("t" * 120)
    long_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_tmp))
    data = long_data_dir(tmp_path)
    runtime = Runtime.open(Settings(data_dir=data))
    record_holder(data, command="askdesk serve slack")  # this test process plays the bot
    try:
        with caplog.at_level(logging.WARNING, logger="askdesk.admin"):
            channel = await AdminChannel.start(Settings(data_dir=data), runtime)
        assert channel is None
        env = cli_env(data, TMPDIR=str(long_tmp))
        ingest_code, _, ingest_err = await run_cli(["ingest", str(SAMPLE_KB / DOC)], env)
        search_code, _, search_err = await run_cli(["search", "income"], env)
    finally:
        await runtime.close()
    warnings = [r.getMessage() for r in caplog.records if r.name == "askdesk.admin"]
    assert len(warnings) == 1 and "admin channel off" in warnings[0] and "shorter ASKDESK_DATA_DIR" in warnings[0]
    assert ingest_code == EXIT_IN_USE and "handed to it automatically" not in ingest_err
    assert "admin channel does not answer" in ingest_err and "stop the bot" in ingest_err
    assert len(ingest_err.strip().splitlines()) == 1
    assert search_code == EXIT_IN_USE and "handed to it automatically" not in search_err
    assert "admin channel is not running" in search_err


async def test_idle_clients_are_dropped_and_at_most_max_clients_are_held(tmp_path):
    data = tmp_path / "data"
    runtime = Runtime.open(Settings(data_dir=data))
    channel = await AdminChannel.start(Settings(data_dir=data), runtime)
    assert channel is not None
    channel.request_timeout = 0.5
    channel.max_clients = 4
    clients = []
    try:
        before = len(os.listdir("/proc/self/fd"))
        for _ in range(200):
            clients.append(await asyncio.open_unix_connection(str(channel.path)))
        await asyncio.sleep(0.2)
        held = len(os.listdir("/proc/self/fd")) - before - len(clients)  # the bot's side of them
        busy = [await asyncio.wait_for(reader.readline(), 5) for reader, _ in clients[4:]]
        await asyncio.sleep(0.8)  # past the request timeout: the first four are dropped too
        first = [await asyncio.wait_for(reader.read(), 5) for reader, _ in clients[:4]]
        for _, writer in clients:
            writer.close()
        clients = []
        await asyncio.sleep(0.1)
        assert len(channel._handlers) == 0
        # the channel still serves a client that does speak
        reader, writer = await asyncio.open_unix_connection(str(channel.path))
        writer.write(b"not json\n")
        reply = await asyncio.wait_for(reader.readline(), 5)
        writer.close()
    finally:
        for _, writer in clients:
            writer.close()
        await channel.close()
        await runtime.close()
    assert held <= 4 + 2, held  # the four admitted (plus an accept in flight), not 200
    assert all(BUSY.encode() in line for line in busy)
    assert first == [b""] * 4  # closed without a word
    assert b"did not understand" in reply
