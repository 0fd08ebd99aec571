"""The facility collection: schema (shared dense + sparse layout), payload and indexes.

The collection is created by the knowledge store's `ensure_collection` (dense "dense" +
sparse "sparse" vectors, embedder recorded), so a facility search can use the same hybrid
query code. Every filtered field, and the geo point, gets a payload index (Edge and server).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from qdrant_client import models

from agent.facilities.registry import FLAGS, Facility
from agent.knowledge.embed_cache import embed_with_cache, open_cache
from agent.knowledge.sparse import bm25_document
from agent.knowledge.store import DENSE, SPARSE, ensure_collection

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime

KEYWORD = models.PayloadSchemaType.KEYWORD
PAYLOAD_INDEXES: dict[str, models.PayloadSchemaType] = {
    "operation_number": KEYWORD,
    "source": KEYWORD,
    "city_key": KEYWORD,
    "county_key": KEYWORD,
    "zip5": KEYWORD,
    "ages": KEYWORD,
    "days": KEYWORD,
    **{flag: models.PayloadSchemaType.BOOL for flag in FLAGS},
    "capacity": models.PayloadSchemaType.INTEGER,
    "open_minutes": models.PayloadSchemaType.INTEGER,
    "close_minutes": models.PayloadSchemaType.INTEGER,
    "location": models.PayloadSchemaType.GEO,
}


async def ensure_facility_collection(runtime: "Runtime", name: str, *, embedder: "Embedder") -> None:
    await ensure_collection(runtime, name, embedder=embedder)
    await runtime.store.ensure_payload_indexes(name, PAYLOAD_INDEXES)


def facility_payload(facility: Facility, *, source: str) -> dict[str, Any]:
    payload = facility.model_dump(mode="json")
    payload["source"] = source
    payload["features"] = facility.features()
    payload["description"] = facility.description()
    payload["content_hash"] = facility.content_hash()
    return payload


async def stored_hashes(runtime: "Runtime", name: str) -> dict[str, dict[str, str]]:
    """point id -> {operation_number, source, content_hash} of every stored facility."""
    out: dict[str, dict[str, str]] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(
            name, limit=4096, offset=offset, with_payload=["operation_number", "source", "content_hash"],
            with_vectors=False,
        )
        for p in points:
            out[str(p.id)] = {k: str(v) for k, v in (p.payload or {}).items()}
        if offset is None:
            return out


async def upsert_facilities(
    runtime: "Runtime",
    name: str,
    facilities: list[Facility],
    *,
    source: str,
    embedder: "Embedder",
    batch: int = 256,
) -> None:
    cache = open_cache(runtime.settings)
    try:
        for start in range(0, len(facilities), batch):
            chunk = facilities[start : start + batch]
            texts = [f.description() for f in chunk]
            dense = await embed_with_cache(embedder, texts, cache)
            points = [
                models.PointStruct(
                    id=f.point_id(),
                    vector={DENSE: vec, SPARSE: bm25_document(text)},
                    payload=facility_payload(f, source=source),
                )
                for f, vec, text in zip(chunk, dense, texts, strict=True)
            ]
            await runtime.store.upsert(name, points)
        if facilities:
            await runtime.store.optimize(name)  # build the HNSW and payload indexes now, not at query time
    finally:
        if cache is not None:
            cache.close()


async def delete_points(runtime: "Runtime", name: str, ids: list[str]) -> None:
    await runtime.store.delete_ids(name, ids)
