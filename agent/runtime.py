"""The process-wide handles: settings, one Qdrant client, one embedder.

Embedded Qdrant locks its directory, so a process must open it once and share the
client between the knowledge base, the facility registry and every surface.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from qdrant_client import AsyncQdrantClient

from agent.config import Settings

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder


def open_qdrant(settings: Settings) -> AsyncQdrantClient:
    if settings.qdrant_url:
        return AsyncQdrantClient(url=settings.qdrant_url, api_key=settings.qdrant_api_key)
    settings.qdrant_path.mkdir(parents=True, exist_ok=True)
    return AsyncQdrantClient(path=str(settings.qdrant_path))


@dataclass
class Runtime:
    settings: Settings
    qdrant: AsyncQdrantClient
    _embedders: dict[str, "Embedder"] = field(default_factory=dict)

    @classmethod
    def open(cls, settings: Settings) -> "Runtime":
        return cls(settings=settings, qdrant=open_qdrant(settings))

    def embedder(self, spec: str | None = None) -> "Embedder":
        """The embedder named by `spec` (default: settings.embedder), created once."""
        from agent.knowledge.embedders import make_embedder

        spec = spec or self.settings.embedder
        if spec not in self._embedders:
            self._embedders[spec] = make_embedder(spec)
        return self._embedders[spec]

    async def close(self) -> None:
        await self.qdrant.close()
