"""A bounded in-memory cache of query embeddings: the same question asked again (common in
staff channels, and the router's pre-filter embeds every message too) skips the model.

Keyed by the exact query text; per process and per embedder, so it can never serve a vector
from another model. cachetools' LRU keeps it bounded (`ASKDESK_QUERY_CACHE_SIZE`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from cachetools import LRUCache

from agent.knowledge.embedders import Embedder


class QueryCachingEmbedder:
    """Wraps an embedder; everything but `embed_query` is passed through."""

    def __init__(self, inner: Embedder, size: int) -> None:
        self.inner = inner
        self._cache: LRUCache[str, list[float]] = LRUCache(maxsize=size)
        self._pending: dict[str, asyncio.Future[list[float]]] = {}
        self.hits = 0
        self.misses = 0

    def __getattr__(self, item: str) -> Any:  # name, dim, probe_dim, embed_documents ...
        return getattr(self.inner, item)

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return await self.inner.embed_documents(texts)

    async def embed_query(self, text: str) -> list[float]:
        cached = self._cache.get(text)
        if cached is not None:
            self.hits += 1
            return list(cached)
        pending = self._pending.get(text)
        if pending is not None:  # the same question already being embedded: share the result
            self.hits += 1
            return list(await asyncio.shield(pending))
        self.misses += 1
        future: asyncio.Future[list[float]] = asyncio.get_running_loop().create_future()
        self._pending[text] = future
        try:
            vector = await self.inner.embed_query(text)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            self._pending.pop(text, None)
        future.set_result(vector)
        self._cache[text] = vector
        return list(vector)
