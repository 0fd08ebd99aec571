"""A registry's collection: the shared dense + sparse layout, payload indexes, upserts.

The collection is created by the knowledge store's `ensure_collection` (dense "dense" + sparse
"sparse" vectors, embedder recorded), so a name search uses the same hybrid query code. Every
filtered field, and the geo point, gets a payload index (Edge and server). The payload is the
record plus `source`, `features` (its flags), `description` (what is embedded) and
`content_hash`; `version` in the collection's metadata changes with every ingest that changed
something, so every process notices new places.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import agent.store.models as models
from agent.knowledge.embed_cache import embed_with_cache, open_cache
from agent.knowledge.sparse import bm25_document
from agent.knowledge.store import DENSE, SPARSE, ensure_collection
from agent.registry.records import RecordSchema, place_key

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime

VERSION_KEY = "registry_version"
PLACES_KEY = "registry_places"  # a shared store's places of the current version
_T = models.PayloadSchemaType


def payload_indexes(schema: RecordSchema) -> dict[str, models.PayloadSchemaType]:
    decl = schema.decl
    out: dict[str, models.PayloadSchemaType] = {decl.id_field: _T.KEYWORD, "source": _T.KEYWORD}
    out |= {place_key(n, p): _T.KEYWORD for n, p in decl.places.items()}
    out |= {n: _T.KEYWORD for n in decl.tags}
    if decl.days:
        out[decl.days[0]] = _T.KEYWORD
    out |= {n: _T.BOOL for n in decl.flags}
    out |= {n: _T.INTEGER for n in decl.numbers}
    if decl.hours:
        out |= {"open_minutes": _T.INTEGER, "close_minutes": _T.INTEGER}
    if decl.geo:
        out[decl.geo[0]] = _T.GEO
    return out


async def ensure_registry_collection(runtime: "Runtime", schema: RecordSchema, name: str, *,
                                     embedder: "Embedder") -> None:
    await ensure_collection(runtime, name, embedder=embedder)
    await runtime.store.ensure_payload_indexes(name, payload_indexes(schema))


def record_payload(schema: RecordSchema, record: dict[str, Any], *, source: str) -> dict[str, Any]:
    payload = dict(record)
    payload["source"] = source
    payload["features"] = schema.flags_of(record)
    payload["description"] = schema.description(record)
    payload["content_hash"] = schema.content_hash(record)
    return payload


async def stored_hashes(runtime: "Runtime", name: str, id_field: str,
                        extra: list[str] | None = None) -> dict[str, dict[str, Any]]:
    """point id -> {id, source, content_hash, the `extra` fields} of every stored record."""
    out: dict[str, dict[str, Any]] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(
            name, limit=4096, offset=offset, with_payload=[id_field, "source", "content_hash", *(extra or [])],
            with_vectors=False)
        for p in points:
            out[str(p.id)] = dict(p.payload or {})
        if offset is None:
            return out


async def upsert_records(runtime: "Runtime", schema: RecordSchema, name: str, records: list[dict[str, Any]], *,
                         source: str, embedder: "Embedder", batch: int = 256) -> None:
    cache = open_cache(runtime.settings)
    id_field = schema.decl.id_field
    try:
        for start in range(0, len(records), batch):
            chunk = records[start : start + batch]
            texts = [schema.description(r) for r in chunk]
            dense = await embed_with_cache(embedder, texts, cache)
            points = [
                models.PointStruct(id=schema.point_id(r[id_field]), vector={DENSE: vec, SPARSE: bm25_document(text)},
                                   payload=record_payload(schema, r, source=source))
                for r, vec, text in zip(chunk, dense, texts, strict=True)
            ]
            await runtime.store.upsert(name, points)
        if records:
            await runtime.store.optimize(name)  # build the HNSW and payload indexes now, not at query time
    finally:
        if cache is not None:
            cache.close()


async def mark_changed(runtime: "Runtime", name: str, places: dict[str, Any] | None = None) -> str:
    """A new version in the collection's metadata: every registry object reloads its places.
    On a shared store the places counted for it (`KnownPlaces.to_json`, proportional to the
    number of places) go in the same write, so another host reads them instead of every record."""
    metadata = await runtime.store.collection_metadata(name) or {}
    version = uuid.uuid4().hex
    shared = {PLACES_KEY: {"version": version, "places": places}} if places is not None and not runtime.store.exclusive \
        else {PLACES_KEY: None}
    await runtime.store.update_metadata(name, {**metadata, VERSION_KEY: version, **shared})
    return version
