"""The process-wide handles: settings, one vector store, one embedder per spec, and every
per-process cache.

The embedded store (Qdrant Edge) locks its data directory, so a process opens it once and
shares it between the knowledge base, the registries and every surface. Caches of what is
derived from a collection (its vocabulary, a registry's places, the off-topic examples'
vectors) live in `caches`, keyed by (what, collection): one owner, dropped with the runtime,
cleared by an ingest of that collection; no module keeps state of its own.
"""

from __future__ import annotations

import asyncio
import logging
import time

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.config import Settings
from agent.private import private_dir
from agent.store import VectorStore, open_store
from agent.store.readers import Readers

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder

IDLE_POLL_SECONDS = 0.001  # how often background work looks whether the searches have ended


@dataclass
class Runtime:
    settings: Settings
    store: VectorStore
    caches: dict[tuple[str, str | None], Any] = field(default_factory=dict)  # (what, collection) -> value
    readers: Readers = field(default_factory=Readers)  # searches in flight (agent/store/readers.py)
    _embedders: dict[str, "Embedder"] = field(default_factory=dict)
    _background: set[asyncio.Task] = field(default_factory=set)  # refreshes of caches, cancelled at close
    _written: dict[str, float] = field(default_factory=dict)  # collection -> when this process last wrote it
    _closers: list[Callable[[], Awaitable[None]]] = field(default_factory=list)  # run at close (MCP connections)

    @classmethod
    def open(cls, settings: Settings) -> "Runtime":
        """Open the configured store; `StoreInUse` when another process holds the data dir."""
        if not settings.qdrant_url:
            private_dir(settings.data_dir)  # conversations, caches and documents: 0700
        return cls(settings=settings, store=open_store(settings))

    def embedder(self, spec: str | None = None) -> "Embedder":
        """The embedder named by `spec` (default: settings.embedder), created once, with its
        query embeddings cached in memory."""
        from agent.knowledge.embedders import make_embedder
        from agent.knowledge.query_cache import QueryCachingEmbedder

        spec = spec or self.settings.embedder
        if spec not in self._embedders:
            embedder = make_embedder(spec)
            if self.settings.query_cache_size > 0:
                embedder = QueryCachingEmbedder(embedder, self.settings.query_cache_size)  # type: ignore[assignment]
            self._embedders[spec] = embedder
        return self._embedders[spec]

    def forget(self, collection: str) -> None:
        """Drop everything cached about `collection` (it was just written)."""
        for key in [k for k in self.caches if k[1] == collection]:
            del self.caches[key]

    def mark_written(self, collection: str) -> None:
        """This process just changed `collection`: caches read before now are stale at once."""
        self._written[collection] = time.monotonic()

    def written_at(self, collection: str) -> float:
        return self._written.get(collection, float("-inf"))

    def spawn(self, coro) -> asyncio.Task:
        """Run `coro` in the background (a cache refresh), owned by the runtime."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def idle(self) -> None:
        """Questions first: background work (a statistics scan) calls this between two short
        slices; it lets whatever is waiting run and returns once no search is in flight."""
        await asyncio.sleep(0)
        while self.readers.busy:
            await asyncio.sleep(IDLE_POLL_SECONDS)

    def closes(self, closer: Callable[[], Awaitable[None]]) -> None:
        """Run `closer` at close: what was opened lazily on this process's behalf (an MCP
        server's connection and child process) ends with it."""
        self._closers.append(closer)

    async def close(self) -> None:
        for task in list(self._background):
            task.cancel()
        for closer in reversed(self._closers):
            try:
                await closer()
            except Exception as exc:  # noqa: BLE001 - the store is closed whatever else fails
                logging.getLogger("askdesk.runtime").warning("closing failed: %s", type(exc).__name__)
        self._closers.clear()
        await self.store.close()
