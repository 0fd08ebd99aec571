"""One-time move of a data directory built by the old embedded store (qdrant-client's local
mode, `<data_dir>/qdrant/`) into Qdrant Edge, run when the store is opened.

Points are copied with their vectors, so nothing is re-embedded. A collection becomes visible
only when all its points are copied (its metadata is written last), so an interrupted
migration simply starts that collection again next time. The old directory is then renamed
to `qdrant-local-mode.migrated/` (delete it once you are happy) and never read again.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import agent.store.models as models

if TYPE_CHECKING:
    from agent.store.edge import EdgeStore

OLD_DIR = "qdrant"
MIGRATED_DIR = "qdrant-local-mode.migrated"


# The fields a knowledge collection indexes (agent/knowledge/store.py: INDEXED_FIELDS, which the
# knowledge layer ensures again whenever it opens a collection for ingest), named here so that the
# store layer imports nothing above it; tests/test_store_migration.py keeps the two the same.
KNOWLEDGE_INDEXED = ("source", "lang", "file_hash", "version", "origin", "audience")


def _indexes_for(payload: dict) -> dict[str, models.PayloadSchemaType]:
    """The payload indexes for this kind of collection: a knowledge collection's own; for a
    registry's, one per filterable value by its type (its next ingest adds what it declares)."""
    if "chunk_index" in payload or "file_hash" in payload:
        return {k: models.PayloadSchemaType.KEYWORD for k in KNOWLEDGE_INDEXED if k in payload}
    types = models.PayloadSchemaType
    out: dict[str, models.PayloadSchemaType] = {}
    for key, value in payload.items():
        if isinstance(value, bool):
            out[key] = types.BOOL
        elif isinstance(value, int):
            out[key] = types.INTEGER
        elif isinstance(value, dict) and {"lat", "lon"} <= set(value):
            out[key] = types.GEO
        elif isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
            out[key] = types.KEYWORD
    return out


def migrate_local_mode(data_dir: Path, store: "EdgeStore") -> list[str]:
    """Copy every collection of an old local-mode store into `store`; the names copied."""
    old = data_dir / OLD_DIR
    if not (old / "meta.json").is_file():
        return []
    from qdrant_client import QdrantClient

    print(f"askdesk: moving {old} (the old embedded store) to Qdrant Edge — once; "
          "no re-embedding needed …", file=sys.stderr)
    client = QdrantClient(path=str(old))
    done: list[str] = []
    try:
        for collection in client.get_collections().collections:
            name = collection.name
            if store._read_meta(name) is not None:
                continue  # copied by an earlier, interrupted run
            info = client.get_collection(name)
            vectors = info.config.params.vectors
            dim = vectors["dense"].size if isinstance(vectors, dict) else vectors.size  # type: ignore[union-attr]
            store.create_sync(name, dim=dim, metadata=None)
            offset, indexed = None, False
            while True:
                records, offset = client.scroll(name, limit=512, offset=offset, with_payload=True, with_vectors=True)
                points = [models.PointStruct(id=r.id, vector=r.vector or {}, payload=r.payload) for r in records]
                if points:
                    store.upsert_sync(name, points)
                    if not indexed:
                        store.index_sync(name, _indexes_for(points[0].payload or {}))
                        indexed = True
                if offset is None:
                    break
            store._shards[name].optimize()
            store.update_metadata_sync(name, dict(info.config.metadata or {}))
            done.append(name)
    finally:
        client.close()
    old.rename(data_dir / MIGRATED_DIR)
    print(f"askdesk: moved {len(done)} collection(s) ({', '.join(done) or 'none'}); the old copy is in "
          f"{data_dir / MIGRATED_DIR} — delete it when you no longer need it.", file=sys.stderr)
    return done
