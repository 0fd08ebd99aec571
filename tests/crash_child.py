"""A process to kill -9 at a chosen moment of an ingest (tests/test_ingest_atomic.py).

    python -m tests.crash_child        # then one JSON request per line on stdin

It imports askdesk once and forks one child per request, so each run costs a fork instead
of an interpreter start. A child opens the store (Qdrant Edge in the data dir, or a Qdrant
server's API over qdrant-client's local mode in `server_path`), wraps it so that it stops
dead at the requested moment of writing file `source`, and either ingests `paths` itself
(`mode: ingest`) or serves the admin channel like `askdesk serve` (`mode: serve`) and waits
for a handed-over ingest. Every child writes JSON lines on the shared stdout:
`{"pid", "event": "ready"}` (serving), `{"pid", "event": "paused", "at"}` (now is the
moment: kill it), `{"pid", "event": "done"}` (the ingest finished without reaching it).

Moments, for the file `source`:
- `pending`: its new version is listed as hidden, nothing of it written yet;
- `first_batch`: the first of its upsert batches is written;
- `switch`: every batch is written, the switch not yet;
- `switched`: the switch is written, the old version not yet deleted;
- `end`: its old version is deleted (a changed file), or the index build is next (a new file).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from agent.config import Settings
from agent.knowledge import ingest as ingest_module
from agent.knowledge import versions
from agent.runtime import Runtime

BATCH = 4  # chunks per upsert: a file of ten chunks takes three batches
EMBEDDER = "test:hash"


class HashEmbedder:
    """Deterministic 8-d vectors, no model: the runs time writes, not embedding."""

    name = EMBEDDER
    dim = 8

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [await self.embed_query(t) for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        digest = hashlib.sha256(text.encode()).digest()
        return [1.0 + b / 255 for b in digest[:8]]


def say(**message: Any) -> None:
    os.write(1, (json.dumps({"pid": os.getpid(), **message}) + "\n").encode())


class StopAt:
    """The store, stopping forever at one moment of writing one file."""

    def __init__(self, inner: Any, source: str, at: str) -> None:
        self._inner = inner
        self._source = source
        self._at = at
        self._pending: str | None = None
        self._switched = False
        self._batches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def _stop(self) -> None:
        say(event="paused", at=self._at)
        await asyncio.Event().wait()

    async def update_metadata(self, name: str, patch: dict[str, Any]) -> None:
        mine = next((key[len(versions.HIDDEN):] for key, value in patch.items() if isinstance(value, dict)
                     and value.get("state") == "pending" and value.get("source") == self._source), None)
        is_switch = self._pending is not None and versions.HIDDEN + self._pending in patch and \
            patch[versions.HIDDEN + self._pending] is None
        if is_switch and self._at == "switch":
            await self._stop()
        await self._inner.update_metadata(name, patch)
        if mine is not None:
            self._pending = mine
            if self._at == "pending":
                await self._stop()
        if is_switch:
            self._switched = True
            if self._at == "switched":
                await self._stop()

    async def upsert(self, name: str, points: list) -> None:
        await self._inner.upsert(name, points)
        if points and (points[0].payload or {}).get("source") == self._source:
            self._batches += 1
            if self._batches == 1 and self._at == "first_batch":
                await self._stop()

    async def delete_where(self, name: str, flt: Any) -> None:
        await self._inner.delete_where(name, flt)
        if self._switched and self._at == "end":
            await self._stop()

    async def optimize(self, name: str) -> None:
        if self._switched and self._at == "end":
            await self._stop()
        await self._inner.optimize(name)


def _open(request: dict) -> Runtime:
    settings = Settings(data_dir=Path(request["data"]), embedder=EMBEDDER, embedding_cache=False)
    if request.get("server_path"):
        from qdrant_client import AsyncQdrantClient

        from agent.store.server import ServerStore

        store = ServerStore(AsyncQdrantClient(path=request["server_path"]), where="local", payload_indexes=False)
        runtime = Runtime(settings=settings, store=store)
    else:
        runtime = Runtime.open(settings)
    runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    runtime.store = StopAt(runtime.store, request["source"], request["at"])  # type: ignore[assignment]
    return runtime


async def _child(request: dict) -> None:
    ingest_module.UPSERT_BATCH = BATCH
    if request.get("stale_after") is not None:  # the server backend's age for a crashed pending version
        versions.STALE_PENDING_SECONDS = request["stale_after"]
    runtime = _open(request)
    if request["mode"] == "serve":
        from bot.commands.serve import start_admin_channel

        channel = await start_admin_channel(runtime.settings, runtime)
        say(event="ready", listening=channel is not None)
        await asyncio.Event().wait()
    await ingest_module.ingest(runtime, [Path(p) for p in request["paths"]])
    await runtime.close()
    say(event="done")


def main() -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the kernel
    for line in sys.stdin:
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            try:
                asyncio.run(_child(request))
            except BaseException as exc:  # the test waits for an event: tell it
                say(event="error", error=repr(exc))
            finally:
                os._exit(0)
        say(event="forked", child=pid)


if __name__ == "__main__":
    main()
