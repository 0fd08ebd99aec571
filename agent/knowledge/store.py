"""Qdrant collections for askdesk: schema, embedder bookkeeping, per-file chunk sets.

Every collection has a dense vector "dense" (cosine, the embedder's size) and a sparse vector
"sparse" (BM25 weights, IDF applied by Qdrant). The collection's metadata records which
embedder built it; using a collection with another embedder raises `EmbedderMismatch`.
Points of one file share `source` and `file_hash`, which is what makes ingestion incremental
and repairable (see agent/knowledge/ingest.py).
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING, Any

from qdrant_client import models

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime

DENSE = "dense"
SPARSE = "sparse"
SCHEMA_VERSION = 1
POINT_NAMESPACE = uuid.UUID("6f1c9a52-8d1e-4e55-9a63-0b7f3c1d2e4a")
# payload indexes for the fields searches and ingestion filter on
INDEXED_FIELDS: dict[str, models.PayloadSchemaType] = {
    field_name: models.PayloadSchemaType.KEYWORD for field_name in ("source", "lang", "file_hash")
}


class KnowledgeBaseUnavailable(Exception):
    """The collection is missing/empty, the store cannot be reached or cannot be used with the
    configured embedder. The message is meant for the user (re-exported by search.py)."""


class StoreError(KnowledgeBaseUnavailable):
    """A knowledge-store problem with a message meant for the user."""


class EmbedderMismatch(StoreError):
    """The collection was built by a different embedder than the one configured."""


def point_id(source: str, chunk_index: int, content_hash: str) -> str:
    """Deterministic id: the same chunk of the same file always lands on the same point."""
    return str(uuid.uuid5(POINT_NAMESPACE, f"{source}\x00{chunk_index}\x00{content_hash}"))


async def embedder_dim(embedder: "Embedder") -> int:
    """The embedder's vector size, asking the API once when it is not known up front."""
    if not embedder.dim and hasattr(embedder, "probe_dim"):
        await embedder.probe_dim()  # type: ignore[attr-defined]
    if not embedder.dim:
        raise StoreError(f"cannot tell the vector size of embedder {embedder.name}")
    return embedder.dim


async def collection_metadata(runtime: "Runtime", name: str) -> dict[str, Any] | None:
    """The collection's askdesk metadata, or None when the collection does not exist."""
    return await runtime.store.collection_metadata(name)


def _mismatch(name: str, built_by: str, embedder: "Embedder") -> EmbedderMismatch:
    return EmbedderMismatch(
        f"collection {name!r} was built with {built_by}, but the configured embedder is "
        f"{embedder.name}; re-ingest into a new collection or set ASKDESK_EMBEDDER={built_by}"
    )


def check_embedder(name: str, metadata: dict[str, Any], embedder: "Embedder") -> None:
    built_by = metadata.get("embedder")
    if built_by and built_by != embedder.name:
        raise _mismatch(name, built_by, embedder)


async def ensure_collection(runtime: "Runtime", name: str, *, embedder: "Embedder") -> None:
    """Create `name` (dense cosine + sparse IDF, payload indexes on the filtered fields) if
    missing; refuse one built by another embedder."""
    metadata = await collection_metadata(runtime, name)
    if metadata is not None:
        check_embedder(name, metadata, embedder)
        if not metadata.get("embedder"):  # created by hand or an older build: adopt it
            await runtime.store.update_metadata(name, {"embedder": embedder.name})
        return
    dim = await embedder_dim(embedder)
    await runtime.store.create_collection(
        name, dim=dim, metadata={"embedder": embedder.name, "dim": dim, "schema": SCHEMA_VERSION}
    )
    await runtime.store.ensure_payload_indexes(name, INDEXED_FIELDS)


async def file_states(runtime: "Runtime", name: str) -> dict[str, dict[str, Any]]:
    """source -> {"hashes": Counter(file_hash -> points), "n_chunks": recorded chunk count}."""
    states: dict[str, dict[str, Any]] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(
            name,
            limit=1024,
            offset=offset,
            with_payload=["source", "file_hash", "n_chunks"],
            with_vectors=False,
        )
        for p in points:
            payload = p.payload or {}
            state = states.setdefault(str(payload.get("source")), {"hashes": Counter(), "n_chunks": {}})
            fh = str(payload.get("file_hash"))
            state["hashes"][fh] += 1
            state["n_chunks"][fh] = payload.get("n_chunks")
        if offset is None:
            return states


async def delete_file_points(runtime: "Runtime", name: str, source: str, *, keep_hash: str | None = None) -> None:
    """Delete a file's points, except those of its current version `keep_hash`."""
    must_not = [models.FieldCondition(key="file_hash", match=models.MatchValue(value=keep_hash))] if keep_hash else None
    selector = models.Filter(
        must=[models.FieldCondition(key="source", match=models.MatchValue(value=source))],
        must_not=must_not,
    )
    await runtime.store.delete_where(name, selector)
