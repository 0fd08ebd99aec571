"""The server backend: qdrant-client talking to a Qdrant server or cluster (`ASKDESK_QDRANT_URL`).

Any number of processes (bot replicas, CLI commands) can share one server. Tests also run
this backend over qdrant-client's local mode (`AsyncQdrantClient(path=...)`), which speaks the
same API in-process.
"""

from __future__ import annotations

from typing import Any

from qdrant_client import AsyncQdrantClient, models

from agent.store.base import WithPayload, WithVectors

DENSE = "dense"
SPARSE = "sparse"


class ServerStore:
    def __init__(self, client: AsyncQdrantClient, *, where: str, payload_indexes: bool = True) -> None:
        self.client = client
        self.where = where
        self.exclusive = False  # other processes may be writing at the same time
        self.payload_indexes = payload_indexes  # False for qdrant-client's local mode: it has none

    @classmethod
    def connect(cls, url: str, api_key: str | None = None) -> "ServerStore":
        return cls(AsyncQdrantClient(url=url, api_key=api_key), where=url)

    async def collection_exists(self, name: str) -> bool:
        return await self.client.collection_exists(name)

    async def collection_metadata(self, name: str) -> dict[str, Any] | None:
        if not await self.client.collection_exists(name):
            return None
        info = await self.client.get_collection(name)
        return dict(info.config.metadata or {})

    async def create_collection(self, name: str, *, dim: int, metadata: dict[str, Any]) -> None:
        await self.client.create_collection(
            name,
            vectors_config={DENSE: models.VectorParams(size=dim, distance=models.Distance.COSINE)},
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            metadata=metadata,
        )

    async def update_metadata(self, name: str, metadata: dict[str, Any]) -> None:
        await self.client.update_collection(name, metadata=metadata)

    async def ensure_payload_indexes(self, name: str, fields: dict[str, models.PayloadSchemaType]) -> None:
        if not self.payload_indexes:
            return
        existing = set(((await self.client.get_collection(name)).payload_schema or {}).keys())
        for field_name, schema in fields.items():
            if field_name not in existing:
                await self.client.create_payload_index(name, field_name, schema, wait=True)

    async def upsert(self, name: str, points: list[models.PointStruct]) -> None:
        await self.client.upsert(name, points=points, wait=True)

    async def set_payload(self, name: str, payload: dict[str, Any], flt: models.Filter) -> None:
        await self.client.set_payload(name, payload=payload, points=models.FilterSelector(filter=flt), wait=True)

    async def delete_ids(self, name: str, ids: list[str]) -> None:
        if ids:
            await self.client.delete(name, points_selector=models.PointIdsList(points=ids), wait=True)

    async def delete_where(self, name: str, flt: models.Filter) -> None:
        await self.client.delete(name, points_selector=models.FilterSelector(filter=flt), wait=True)

    async def count(self, name: str, flt: models.Filter | None = None) -> int:
        return (await self.client.count(name, count_filter=flt, exact=True)).count

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
        return await self.client.scroll(
            name, scroll_filter=scroll_filter, limit=limit, offset=offset,
            with_payload=with_payload, with_vectors=with_vectors,  # type: ignore[arg-type]
        )

    async def retrieve(self, name: str, ids: list[str], *, with_payload: WithPayload = True) -> list[models.Record]:
        return await self.client.retrieve(name, ids=ids, with_payload=with_payload)  # type: ignore[arg-type]

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
        response = await self.client.query_points(
            name, query=query, using=using, prefetch=prefetch, query_filter=query_filter, limit=limit,
            with_payload=with_payload, with_vectors=with_vectors,  # type: ignore[arg-type]
        )
        return response.points

    async def optimize(self, name: str) -> None:
        return None  # the server's optimizer runs on its own

    async def close(self) -> None:
        await self.client.close()
