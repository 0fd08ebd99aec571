"""The process-wide handles: settings, one vector store, one embedder per spec.

The embedded store (Qdrant Edge) locks its data directory, so a process opens it once and
shares it between the knowledge base, the facility registry and every surface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.config import Settings
from agent.private import private_dir
from agent.store import VectorStore, open_store

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder


@dataclass
class Runtime:
    settings: Settings
    store: VectorStore
    _embedders: dict[str, "Embedder"] = field(default_factory=dict)

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

    async def close(self) -> None:
        await self.store.close()
