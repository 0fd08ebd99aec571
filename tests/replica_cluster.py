"""Real `askdesk serve slack teams` processes for the replica tests and bench (tests/test_replicas.py,
bench/bench_state.py): each with its own copy of a small ingested knowledge base (the embedded
index is per process), on free ports, logging to a file."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import aiohttp

from agent.config import Settings
from agent.runtime import Runtime
from tests.conftest import SAMPLE_KB, seed_embeddings
from tests.knowledge_fixtures import SMALL_KB_DOC, copy_data_dir
from tests.postgres_server import free_port


@dataclass
class Replica:
    name: str
    proc: asyncio.subprocess.Process
    slack: str
    teams: str
    log: Path

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)


def askdesk_command() -> list[str]:
    exe = Path(sys.executable).with_name("askdesk")
    return [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]


async def ingest_small_kb(data: Path, embedding_cache: Path) -> Path:
    """One small ingested knowledge base, copied for each replica (each has its embedded index)."""
    from agent.knowledge.ingest import ingest

    data.mkdir(parents=True)
    if embedding_cache.is_file():
        shutil.copy(embedding_cache, data / embedding_cache.name)
    seed_embeddings(data)
    runtime = Runtime.open(Settings(data_dir=data))
    try:
        await ingest(runtime, [SAMPLE_KB / SMALL_KB_DOC])
    finally:
        await runtime.close()
    return data


async def start_replica(name: str, root: Path, kb: Path, env: dict[str, str]) -> Replica:
    data = root / name
    copy_data_dir(kb, data)
    slack_port, teams_port = free_port(), free_port()
    log = root / f"{name}.log"
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(
            *askdesk_command(), "serve", "slack", "teams", "--host", "127.0.0.1",
            env={**env, "ASKDESK_DATA_DIR": str(data), "ASKDESK_PORT": str(slack_port),
                 "ASKDESK_TEAMS_PORT": str(teams_port)},
            stdin=asyncio.subprocess.DEVNULL, stdout=out, stderr=out, start_new_session=True)
    return Replica(name, proc, f"http://127.0.0.1:{slack_port}", f"http://127.0.0.1:{teams_port}", log)


async def wait_ready(http: aiohttp.ClientSession, replica: Replica, timeout: float = 90) -> None:
    for _ in range(int(timeout / 0.1)):
        if replica.proc.returncode is not None:
            raise AssertionError(f"{replica.name} exited: {replica.log.read_text()[-2000:]}")
        try:
            async with http.get(f"{replica.slack}/healthz") as r:
                if r.status == 200 and (await r.json()).get("status") == "ready":
                    return
        except aiohttp.ClientConnectionError:
            pass
        await asyncio.sleep(0.1)
    raise AssertionError(f"{replica.name} not ready: {replica.log.read_text()[-2000:]}")
