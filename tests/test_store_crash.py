"""Crash safety of the embedded store: `askdesk ingest` (the real console script) is killed with
SIGKILL at several moments; each time the store reopens (WAL replay, lock released by the
kernel) and search sees every file whole (one version, every chunk), and a final run leaves
every file complete: counts consistent, no duplicates, nothing lost, nothing hidden left over.
Twenty of the sample KB's files (with their shipped embeddings) make each run a few seconds of
pure writes. (Exact moments,
for a changed and a new file and three backends: tests/test_ingest_atomic.py.)"""

from __future__ import annotations

import asyncio
import shutil
import signal
import time
from collections import Counter, defaultdict

from agent.config import Settings
from agent.runtime import Runtime
from tests.conftest import SAMPLE_KB, seed_embeddings
from tests.test_store_concurrency import askdesk_command, cli_env
from tests.visibility import hidden_left, visible_files

KILL_AT = (0.3, 0.55, 0.8, 1.1)
FILES = 20  # of the sample KB's 54: a run long enough to be killed mid-way, and a few seconds  # fractions of a full ingest's time: start-up, first writes, mid-run, late


async def _points(settings: Settings) -> list:
    runtime = Runtime.open(settings)  # reopening after SIGKILL must work: lock gone, WAL replayed
    try:
        if not await runtime.store.collection_exists("kb"):
            return []
        points, _ = await runtime.store.scroll("kb", limit=100_000, with_payload=True)
        return points
    finally:
        await runtime.close()


async def _check_visible(settings: Settings) -> None:
    """After a crash: what search sees of each file is one version with every chunk."""
    runtime = Runtime.open(settings)
    try:
        files = await visible_files(runtime)
    finally:
        await runtime.close()
    assert [s for s, f in files.items() if f.mixed or f.partial] == []


def _check_partial_state(points: list) -> None:
    """After a crash: per (file, version) at most its chunk count, never a chunk twice."""
    ids = Counter(p.id for p in points)
    assert max(ids.values(), default=1) == 1
    per_version: dict[tuple[str, str], list[int]] = defaultdict(list)
    for p in points:
        per_version[(p.payload["source"], p.payload["version"])].append(p.payload["chunk_index"])
    for key, chunks in per_version.items():
        assert len(chunks) == len(set(chunks)), key


async def test_kill_9_during_ingest_loses_nothing_and_duplicates_nothing(tmp_path):
    # how long a whole ingest takes on this machine now, so the kills land mid-run on a fast
    # machine as on a loaded one
    kb = tmp_path / "kb"
    kb.mkdir()
    for source in sorted(p for p in SAMPLE_KB.iterdir() if p.suffix == ".md")[:FILES]:
        shutil.copy(source, kb / source.name)
    scratch = seed_embeddings(tmp_path / "scratch")
    started = time.perf_counter()
    done = await asyncio.create_subprocess_exec(*askdesk_command(), "ingest", str(kb), "--json",
                                                env=cli_env(scratch), stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(done.wait(), 300) == 0
    full = time.perf_counter() - started
    data = seed_embeddings(tmp_path / "data")
    settings = Settings(data_dir=data)
    env = cli_env(data)
    killed = 0
    for delay in (fraction * full for fraction in KILL_AT):
        proc = await asyncio.create_subprocess_exec(
            *askdesk_command(), "ingest", str(kb), "--json", env=env,
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
        )
        try:
            await asyncio.wait_for(proc.wait(), delay)
        except asyncio.TimeoutError:
            proc.send_signal(signal.SIGKILL)
            await proc.wait()
            killed += 1
        _check_partial_state(await _points(settings))
        await _check_visible(settings)
    assert killed >= 1  # at least one run really died mid-way

    proc = await asyncio.create_subprocess_exec(*askdesk_command(), "ingest", str(kb), "--json", env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    assert proc.returncode == 0, err.decode()

    points = await _points(settings)
    _check_partial_state(points)
    runtime = Runtime.open(settings)
    try:
        assert await hidden_left(runtime) == (0, 0)
    finally:
        await runtime.close()
    files = sorted(p.name for p in kb.iterdir())
    by_source: dict[str, list] = defaultdict(list)
    for p in points:
        by_source[p.payload["source"]].append(p)
    assert sorted(by_source) == files  # nothing lost
    for source, mine in by_source.items():
        assert len({p.payload["file_hash"] for p in mine}) == 1, source  # no stale version left
        assert len(mine) == mine[0].payload["n_chunks"], source  # every chunk, once
    again = await asyncio.create_subprocess_exec(*askdesk_command(), "ingest", str(kb), "--json", env=env,
                                                 stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, _ = await asyncio.wait_for(again.communicate(), 300)
    assert b'"updated": []' in out and b'"chunks_written": 0' in out  # consistent: nothing to repair
