"""The vector-store seam: the operations askdesk needs, whatever engine answers them.

Two backends implement it: `EdgeStore` (Qdrant Edge in-process, the embedded default) and
`ServerStore` (qdrant-client against a Qdrant server or cluster). Requests and results use
agent/store/models.py (Filter, PointStruct, Prefetch, RrfQuery, ScoredPoint, Record): plain
dataclasses named and shaped like qdrant-client's `models`, the Qdrant API's own schema, so
code above the seam reads like any Qdrant code. The Edge backend translates them to its native
types; the server backend to qdrant-client's models. Nothing here or above the seam imports
qdrant-client, which costs about 0.7 s to import: only the server backend needs it.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import agent.store.models as models

WithPayload = bool | Sequence[str]
WithVectors = bool | Sequence[str]


class VectorStore(Protocol):
    """Collections of points with a dense vector "dense" and a sparse vector "sparse"."""

    where: str  # for messages: the data directory or the server URL
    # True when this process is the only writer (the embedded store's directory lock): whatever
    # an earlier process left half-done is a crash's leftover, not another writer's work
    exclusive: bool

    async def collection_exists(self, name: str) -> bool: ...

    async def collection_metadata(self, name: str) -> dict[str, Any] | None:
        """askdesk's metadata of the collection (embedder, dim, schema); None when missing."""

    async def create_collection(self, name: str, *, dim: int, metadata: dict[str, Any]) -> None:
        """Dense `dim`-d cosine "dense" + sparse "sparse" with IDF."""

    async def update_metadata(self, name: str, metadata: dict[str, Any]) -> None:
        """Merge `metadata` into the collection's, key by key, in one atomic write; a key set
        to None is removed (Qdrant's own merge rule)."""

    async def ensure_payload_indexes(self, name: str, fields: dict[str, models.PayloadSchemaType]) -> None:
        """Create the missing payload indexes (idempotent)."""

    async def upsert(self, name: str, points: list[models.PointStruct]) -> None:
        """Write points; durable and searchable when this returns."""

    async def set_payload(self, name: str, payload: dict[str, Any], flt: models.Filter) -> None:
        """Set `payload` keys on every point matching `flt` (one operation)."""

    async def delete_ids(self, name: str, ids: list[str]) -> None: ...

    async def delete_where(self, name: str, flt: models.Filter) -> None: ...

    async def count(self, name: str, flt: models.Filter | None = None) -> int: ...

    async def scroll(
        self,
        name: str,
        *,
        scroll_filter: models.Filter | None = None,
        limit: int = 1024,
        offset: Any = None,
        with_payload: WithPayload = True,
        with_vectors: WithVectors = False,
    ) -> tuple[list[models.Record], Any]:
        """A page of points and the offset of the next page (None at the end)."""

    async def retrieve(self, name: str, ids: list[str], *, with_payload: WithPayload = True) -> list[models.Record]: ...

    async def query_points(
        self,
        name: str,
        *,
        query: Any = None,
        using: str | None = None,
        prefetch: list[models.Prefetch] | None = None,
        query_filter: models.Filter | None = None,
        limit: int = 10,
        with_payload: WithPayload = True,
        with_vectors: WithVectors = False,
    ) -> list[models.ScoredPoint]:
        """Nearest points to `query` (a dense list or SparseVector `using` a vector name), or
        the fusion (`RrfQuery`/`FusionQuery`) of `prefetch` stages, in one request."""

    async def optimize(self, name: str) -> None:
        """Build indexes after a bulk write (Edge runs its optimizer; a server does it itself)."""

    async def close(self) -> None: ...
