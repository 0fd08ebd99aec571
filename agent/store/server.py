"""The server backend: qdrant-client talking to a Qdrant server or cluster (`ASKDESK_QDRANT_URL`).

Any number of processes (bot replicas, CLI commands) can share one server. Tests also run
this backend over qdrant-client's local mode (`AsyncQdrantClient(path=...)`), which speaks the
same API in-process.

This module imports qdrant-client (about 0.7 s), and `open_store` imports this module only when
`ASKDESK_QDRANT_URL` is set (the one other user of the client is migrate.py's one-time move of
an old local-mode data dir). Requests arrive as the seam's models (agent/store/models.py) and
go to the client as qdrant-client's models of the same names (`to_qdrant`); results come back
as the seam's models.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Any

from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qm

import agent.store.models as models
from agent.store.base import WithPayload, WithVectors

DENSE = "dense"
SPARSE = "sparse"
_SHAPES: dict[type, tuple[Any, tuple[tuple[str, str], ...]]] = {}  # ours -> (theirs, (field, keyword)...)


def to_qdrant(value: Any) -> Any:
    """The seam's models (agent/store/models.py), at any depth, as qdrant-client's models of the
    same name; qdrant-client's own and plain values pass as they are."""
    kind = type(value)
    if kind.__module__ == models.__name__:
        if isinstance(value, Enum):
            return getattr(qm, kind.__name__)(value.value)
        shape = _SHAPES.get(kind)
        if shape is None:
            theirs = getattr(qm, kind.__name__)
            shape = _SHAPES[kind] = (theirs, tuple((f.name, theirs.model_fields[f.name].alias or f.name)
                                                   for f in dataclasses.fields(kind)))
        theirs, fields = shape
        return theirs(**{keyword: to_qdrant(getattr(value, name)) for name, keyword in fields})
    return models.inside(value, to_qdrant)


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
            vectors_config={DENSE: qm.VectorParams(size=dim, distance=qm.Distance.COSINE)},
            sparse_vectors_config={SPARSE: qm.SparseVectorParams(modifier=qm.Modifier.IDF)},
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
                await self.client.create_payload_index(name, field_name, to_qdrant(schema), wait=True)

    async def upsert(self, name: str, points: list[models.PointStruct]) -> None:
        await self.client.upsert(name, points=to_qdrant(points), wait=True)

    async def set_payload(self, name: str, payload: dict[str, Any], flt: models.Filter) -> None:
        await self.client.set_payload(name, payload=payload, points=qm.FilterSelector(filter=to_qdrant(flt)),
                                     wait=True)

    async def delete_ids(self, name: str, ids: list[str]) -> None:
        if ids:
            await self.client.delete(name, points_selector=qm.PointIdsList(points=ids), wait=True)

    async def delete_where(self, name: str, flt: models.Filter) -> None:
        await self.client.delete(name, points_selector=qm.FilterSelector(filter=to_qdrant(flt)), wait=True)

    async def count(self, name: str, flt: models.Filter | None = None) -> int:
        return (await self.client.count(name, count_filter=to_qdrant(flt), exact=True)).count

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
        records, next_offset = await self.client.scroll(
            name, scroll_filter=to_qdrant(scroll_filter), limit=limit, offset=offset,
            with_payload=with_payload, with_vectors=with_vectors,  # type: ignore[arg-type]
        )
        return [models.neutral(r) for r in records], next_offset

    async def retrieve(self, name: str, ids: list[str], *, with_payload: WithPayload = True) -> list[models.Record]:
        records = await self.client.retrieve(name, ids=ids, with_payload=with_payload)  # type: ignore[arg-type]
        return [models.neutral(r) for r in records]

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
            name, query=to_qdrant(query), using=using, prefetch=to_qdrant(prefetch),
            query_filter=to_qdrant(query_filter), limit=limit,
            with_payload=with_payload, with_vectors=with_vectors,  # type: ignore[arg-type]
        )
        return [models.neutral(p) for p in response.points]

    async def optimize(self, name: str) -> None:
        return None  # the server's optimizer runs on its own

    async def close(self) -> None:
        await self.client.close()
