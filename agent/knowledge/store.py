"""Qdrant collections for askdesk: schema, embedder bookkeeping, per-file chunk sets.

Every collection has a dense vector "dense" (cosine, the embedder's size) and a sparse vector
"sparse" (BM25 weights, IDF applied by Qdrant). The collection's metadata records which
embedder built it; using a collection with another embedder raises `EmbedderMismatch`.
Points of one file share `source`, `file_hash` and `version`, which is what makes ingestion
incremental and each file's update atomic (agent/knowledge/ingest.py, versions.py).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import agent.store.models as models
from agent.knowledge import versions

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime

DENSE = "dense"
SPARSE = "sparse"
SCHEMA_VERSION = 1
POINT_NAMESPACE = uuid.UUID("6f1c9a52-8d1e-4e55-9a63-0b7f3c1d2e4a")
# payload indexes for the fields searches and ingestion filter on
INDEXED_FIELDS: dict[str, models.PayloadSchemaType] = {
    field_name: models.PayloadSchemaType.KEYWORD
    for field_name in ("source", "lang", "file_hash", versions.VERSION, "origin", "audience")
}


class KnowledgeBaseUnavailable(Exception):
    """The collection is missing/empty, the store cannot be reached or cannot be used with the
    configured embedder. The message is meant for the user (re-exported by search.py)."""


class StoreError(KnowledgeBaseUnavailable):
    """A knowledge-store problem with a message meant for the user."""


class EmbedderMismatch(StoreError):
    """The collection was built by a different embedder than the one configured."""


def point_id(source: str, chunk_index: int, content_hash: str, version: str = "") -> str:
    """Deterministic id: a chunk of one version of a file always lands on the same point, and
    never on a point of another version (so writing a version leaves the others intact)."""
    key = f"{source}\x00{chunk_index}\x00{content_hash}" + (f"\x00{version}" if version else "")
    return str(uuid.uuid5(POINT_NAMESPACE, key))


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
    else:
        dim = await embedder_dim(embedder)
        await runtime.store.create_collection(
            name, dim=dim, metadata={"embedder": embedder.name, "dim": dim, "schema": SCHEMA_VERSION}
        )
    await runtime.store.ensure_payload_indexes(name, INDEXED_FIELDS)  # idempotent: an older build lacks `version`


@dataclass
class FileVersion:
    """The chunks of one version of one file that search can see."""

    version: str | None  # None: written before chunks carried versions (see versions.adopt_legacy)
    file_hash: str
    points: int = 0
    n_chunks: int | None = None


async def file_states(runtime: "Runtime", name: str, metadata: dict[str, Any] | None) -> dict[str, list[FileVersion]]:
    """source -> its visible versions (normally one; hidden, unfinished ones are not listed)."""
    found: dict[tuple[str, str | None, str], FileVersion] = {}
    offset = None
    flt = versions.visible(None, metadata)
    while True:
        points, offset = await runtime.store.scroll(
            name,
            scroll_filter=flt,
            limit=1024,
            offset=offset,
            with_payload=["source", "file_hash", "n_chunks", versions.VERSION],
            with_vectors=False,
        )
        for p in points:
            payload = p.payload or {}
            version = payload.get(versions.VERSION)
            key = (str(payload.get("source")), version, str(payload.get("file_hash")))
            item = found.setdefault(key, FileVersion(version=version, file_hash=key[2]))
            item.points += 1
            item.n_chunks = payload.get("n_chunks")
        if offset is None:
            break
    states: dict[str, list[FileVersion]] = {}
    for (source, _, _), item in found.items():
        states.setdefault(source, []).append(item)
    return states
