"""Atomic ingest per file under kill -9: a real process writing a file is killed at each of five
moments (tests/crash_child.py), for a changed file and for a new one, on
Qdrant Edge, on the server backend (qdrant-client's local mode) and in a bot that runs an
ingest handed over through the admin channel. After every kill, search sees each file wholly
old or wholly new: 0 files with two versions, 0 files with a chunk missing. Each run resumes
from what the previous kill left, so the clean-up of leftovers is exercised too.

Each test makes 10 kills (a few seconds; the server backend about 10 s on a 2-core machine): the
forked children avoid an interpreter start per run, and the moments are exact instead of timed,
so one kill per moment and kind reaches the same state every time.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections import Counter
from pathlib import Path

import pytest
from qdrant_client import AsyncQdrantClient

from agent.config import Settings
from agent.knowledge.search import search
from agent.runtime import Runtime
from agent.store.server import ServerStore
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.visibility import hidden_left, visible_files

REPO = Path(__file__).resolve().parent.parent
MOMENTS = ["pending", "first_batch", "switch", "switched", "end"]
RUNS = 1  # each kill lands at a checkpoint the child pauses at, the same state every time
KINDS = ["changed", "new"]
BACKENDS = ["edge", "server", "handover"]
WORDS = ("eligibility income parent provider attendance voucher reimbursement county schedule "
         "absence enrollment subsidy waitlist copay rating").split()


def document(title: str, marker: str, sections: int = 10) -> str:
    """About `sections` chunks (one per section), the marker in the last one."""
    parts = [f"# {title}"]
    for i in range(sections):
        words = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(120))
        parts.append(f"## Part {i}\n\n{words}" + (f" {marker}" if i == sections - 1 else ""))
    return "\n\n".join(parts) + "\n"


def marker(kind: str, moment: str, run: int) -> str:
    return f"marker{kind}{moment.replace('_', '')}{'abc'[run]}"


class Forker:
    """The crash_child process: forks a child per request and reports what children say."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.seen: list[dict] = []
        self.children: list[int] = []

    @classmethod
    async def start(cls) -> "Forker":
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "tests.crash_child", cwd=str(REPO),
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        return cls(proc)

    async def fork(self, request: dict) -> int:
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        await self.proc.stdin.drain()
        pid = (await self.next(lambda m: m.get("event") == "forked"))["child"]
        self.children.append(pid)
        return pid

    async def next(self, match, timeout: float = 60) -> dict:
        for i, message in enumerate(self.seen):
            if match(message):
                return self.seen.pop(i)
        async with asyncio.timeout(timeout):
            while True:
                line = await self.proc.stdout.readline()
                assert line, "crash_child exited"
                message = json.loads(line)
                if match(message):
                    return message
                self.seen.append(message)

    async def event(self, pid: int, *events: str) -> dict:
        return await self.next(lambda m: m.get("pid") == pid and m.get("event") in events)

    async def close(self) -> None:
        self.proc.stdin.close()
        await self.proc.wait()
        for pid in self.children:  # one left alive by a failed test (e.g. a serving child)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


async def kill_9(pid: int) -> None:
    os.kill(pid, signal.SIGKILL)
    for _ in range(2000):  # the kernel reaps it (crash_child ignores SIGCHLD)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        await asyncio.sleep(0.005)
    raise AssertionError(f"pid {pid} survived SIGKILL")


def open_runtime(data: Path, server_path: Path | None) -> Runtime:
    settings = Settings(data_dir=data, embedder=EMBEDDER, embedding_cache=False)
    if server_path is not None:
        runtime = Runtime(settings=settings, store=ServerStore(AsyncQdrantClient(path=str(server_path)),
                                                                where="local", payload_indexes=False))
    else:
        runtime = Runtime.open(settings)  # after a kill -9: the lock is free, the WAL replayed
    runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    return runtime


async def what_search_sees(data: Path, server_path: Path | None, source: str, new_marker: str) -> tuple[dict, str]:
    """(every file's visible view, what `source` is: "absent", "old" or "new"), asserting the
    guarantee: no file shows two versions or misses a chunk, and search agrees."""
    runtime = open_runtime(data, server_path)
    try:
        files = await visible_files(runtime)
        mixed = [s for s, f in files.items() if f.mixed]
        partial = [s for s, f in files.items() if f.partial]
        assert mixed == [] and partial == [], (mixed, partial)
        hits = await search(runtime, new_marker, top_k=3, mode="sparse")
        found = any(new_marker in h.text for h in hits)
    finally:
        await runtime.close()
    if source not in files:
        state = "absent"
    else:
        state = "new" if new_marker in files[source].text else "old"
    assert found == (state == "new"), (state, found)
    return files, state


@pytest.mark.parametrize("backend", BACKENDS)
async def test_kill_9_at_any_moment_shows_each_file_wholly_old_or_wholly_new(backend, tmp_path):
    """Several kill points, each a real process killed with SIGKILL and a restart that reads the
    store: the server backend (qdrant-client's local mode standing in for a server) is the slow
    one, ~10 s here; that is the cost of testing the server path without a server."""
    data = tmp_path / "data"
    kb = tmp_path / "kb"
    kb.mkdir()
    server_path = tmp_path / "server" if backend == "server" else None
    for name in ("a.md", "b.md", "c.md"):
        (kb / name).write_text(document(name, f"start{name[0]}"), encoding="utf-8")
    base = {"data": str(data), "server_path": str(server_path) if server_path else None,
            "mode": "serve" if backend == "handover" else "ingest", "paths": [str(kb)]}
    forker = await Forker.start()
    outcomes: Counter[tuple[str, str, str]] = Counter()
    try:
        async def run(source: str, at: str, **extra) -> str:
            """One ingest of `kb`, stopped and killed at `at` while writing `source`; the child's
            last event (`paused`, or `done` when the moment never came)."""
            pid = await forker.fork({**base, "source": source, "at": at, **extra})
            if backend != "handover":
                message = await forker.event(pid, "paused", "done", "error")
                assert message["event"] != "error", message
                if message["event"] == "paused":
                    await kill_9(pid)
                return message["event"]
            ready = await forker.event(pid, "ready", "error")
            assert ready.get("listening"), ready
            client = asyncio.create_task(hand_over(data, kb))
            paused = asyncio.create_task(forker.event(pid, "paused", "error"))
            done, _ = await asyncio.wait({client, paused}, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            assert done, "neither the job nor the child finished in 60 s"
            if paused in done:
                assert paused.result()["event"] == "paused", paused.result()
                await kill_9(pid)
                output = await asyncio.wait_for(client, 60)
                assert output.code == 1 and "stopped before the job finished" in output.stderr[0], output
                return "paused"
            paused.cancel()
            assert client.result().code == 0, client.result()
            await kill_9(pid)  # a serving bot never exits by itself
            return "done"

        assert await run("none", "never") == "done"  # the first full ingest
        for kind in KINDS:
            for at in MOMENTS:
                for r in range(RUNS):
                    new_marker = marker(kind, at, r)
                    source = "a.md" if kind == "changed" else f"new-{at}-{r}.md"
                    before, _ = await what_search_sees(data, server_path, source, new_marker)
                    (kb / source).write_text(document(source, new_marker), encoding="utf-8")
                    assert await run(source, at) == "paused"
                    after, state = await what_search_sees(data, server_path, source, new_marker)
                    if state == "old":
                        assert after[source].text == before[source].text
                    for other in set(before) - {source}:
                        assert after[other].text == before[other].text, other
                    outcomes[(kind, at, state)] += 1
        # a clean run deletes the leftovers (on a server, other processes may be writing: there,
        # an unfinished version is a crashed one's only once it is STALE_PENDING_SECONDS old)
        assert await run("none", "never", stale_after=0) == "done"
        runtime = open_runtime(data, server_path)
        try:
            files = await visible_files(runtime)
            assert await hidden_left(runtime) == (0, 0)  # no leftovers, nothing hidden
        finally:
            await runtime.close()
    finally:
        await forker.close()
    assert sorted(files) == sorted(p.name for p in kb.iterdir())
    assert all(not f.mixed and not f.partial for f in files.values())
    # before the switch the old version (or nothing) is what search sees; from it on, the new one
    expected = {"pending": "old", "first_batch": "old", "switch": "old", "switched": "new", "end": "new"}
    for kind in KINDS:
        for at in MOMENTS:
            want = expected[at] if kind == "changed" or expected[at] == "new" else "absent"
            assert outcomes[(kind, at, want)] == RUNS, (kind, at, outcomes)
    print(f"\n{backend}: " + ", ".join(f"{k}/{a}: {s} x{n}" for (k, a, s), n in sorted(outcomes.items())))


async def hand_over(data: Path, kb: Path):
    """What `askdesk ingest` does when the bot holds the store (bot/commands: hand_over)."""
    from bot.admin.client import submit
    from bot.admin.protocol import JobRequest

    output = await submit(data, JobRequest(op="ingest", paths=[str(kb)]), lambda event: None)
    assert output is not None, "no admin channel"
    return output
