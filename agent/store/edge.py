"""The embedded backend: one Qdrant Edge shard per collection under `<data_dir>/edge/`.

Qdrant Edge is the Qdrant team's in-process engine (the server's segment, HNSW, payload-index
and query code, in Rust): filtered hybrid queries take about a millisecond where
qdrant-client's pure-Python local mode scanned every point. Each shard keeps a write-ahead
log, so a write is durable when `upsert` returns and a kill -9 loses nothing that was
acknowledged. askdesk's collection metadata (embedder, dim) lives next to the shard in
`<name>.json`, written last: a shard without it is an unfinished create and is rebuilt.
Calls run in worker threads so a long write never stalls the event loop.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from agent.private import private_tree, restrict_umask
import agent.store.edge_convert as cv
import agent.store.models as models
from agent.store.base import WithPayload, WithVectors
from agent.store.lock import DirectoryLock

DENSE = "dense"
SPARSE = "sparse"
EDGE_DIR = "edge"
# int8 copies of the dense vectors pinned in RAM for the HNSW search; the float originals stay
# on disk (memory-mapped, "cold") and are read only to rescore the best candidates and to return
# the few vectors a search asks for. At 100k chunks this keeps a serving process under 400 MB
# (the originals alone are 150 MB) and search no slower (bench/bench_engine.py).
QUANTIZATION = qe.ScalarQuantizationConfig(type=qe.ScalarType.Int8, memory=qe.Memory.Pinned)
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")  # a directory name: no '.', '/' or '..' 


class InvalidCollectionName(ValueError):
    pass


class EdgeStore:
    def __init__(self, root: Path, lock: DirectoryLock | None) -> None:
        self.root = root
        self.where = str(root.parent)
        self.exclusive = True  # the data-dir lock admits one process
        self._lock = lock
        self._shards: dict[str, qe.EdgeShard] = {}
        self._opening = asyncio.Lock()

    @classmethod
    def open(cls, data_dir: Path) -> "EdgeStore":
        """Lock `data_dir` for this process (StoreInUse when another holds it) and open it.
        Every file the engine creates is private (0600 in 0700 directories), whatever the umask."""
        restrict_umask()
        lock = DirectoryLock(data_dir).acquire()
        root = data_dir / EDGE_DIR
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        private_tree(data_dir)
        return cls(root, lock)

    # --- layout --------------------------------------------------------------------
    def _dir(self, name: str) -> Path:
        if not _NAME.match(name):
            raise InvalidCollectionName(
                f"invalid collection name {name!r}: use letters, digits, '_' or '-' (at most 64)"
            )
        return self.root / name

    def _meta_path(self, name: str) -> Path:
        return self.root / f"{self._dir(name).name}.json"

    def _read_meta(self, name: str) -> dict[str, Any] | None:
        try:
            return json.loads(self._meta_path(name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None

    def _write_meta(self, name: str, metadata: dict[str, Any]) -> None:
        path = self._meta_path(name)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(metadata, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        folder = os.open(path.parent, os.O_RDONLY)  # the rename itself survives a power cut too:
        try:  # a file's version switch must not be lost after its old chunks were deleted
            os.fsync(folder)
        finally:
            os.close(folder)

    async def _shard(self, name: str) -> qe.EdgeShard:
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        async with self._opening:
            if name not in self._shards:
                if self._read_meta(name) is None:
                    raise KeyError(f"collection {name!r} does not exist")
                self._shards[name] = await asyncio.to_thread(qe.EdgeShard.load, str(self._dir(name)))
            return self._shards[name]

    async def _run(self, name: str, fn, *args):
        shard = await self._shard(name)
        return await asyncio.to_thread(fn, shard, *args)

    # --- collections ---------------------------------------------------------------------
    async def collection_exists(self, name: str) -> bool:
        return self._read_meta(name) is not None if _NAME.match(name) else False

    async def collection_metadata(self, name: str) -> dict[str, Any] | None:
        if not _NAME.match(name):
            return None
        meta = self._read_meta(name)
        return None if meta is None else dict(meta.get("metadata") or {})

    def create_sync(self, name: str, *, dim: int, metadata: dict[str, Any] | None) -> None:
        """Create the shard; `metadata=None` defers the metadata (and so the collection's
        existence) to a later `update_metadata`, e.g. until a migration has copied every point."""
        path = self._dir(name)
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, memory=qe.Memory.Cold,
                                                quantization_config=QUANTIZATION)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            wal_enabled=True,
        )
        old = self._shards.pop(name, None)
        if old is not None:
            old.close()
        if path.exists():  # a create that died before its metadata was written
            shutil.rmtree(path)
        self._shards[name] = qe.EdgeShard.create(str(path), config)
        if metadata is not None:
            self._write_meta(name, {"metadata": metadata})

    async def create_collection(self, name: str, *, dim: int, metadata: dict[str, Any]) -> None:
        async with self._opening:
            await asyncio.to_thread(self.create_sync, name, dim=dim, metadata=metadata)

    def upsert_sync(self, name: str, points: list[models.PointStruct]) -> None:
        self._shards[name].update(qe.UpdateOperation.upsert_points([cv.to_point(p) for p in points]))

    def index_sync(self, name: str, fields: dict[str, models.PayloadSchemaType]) -> None:
        shard = self._shards[name]
        existing = set(shard.info().payload_schema)
        for field_name, schema in fields.items():
            if field_name not in existing:
                shard.update(qe.UpdateOperation.create_field_index(field_name, cv.schema_type(schema)))

    def update_metadata_sync(self, name: str, metadata: dict[str, Any]) -> None:
        meta = self._read_meta(name) or {}
        merged = dict(meta.get("metadata") or {})
        for key, value in metadata.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        meta["metadata"] = merged
        self._write_meta(name, meta)

    async def update_metadata(self, name: str, metadata: dict[str, Any]) -> None:
        self.update_metadata_sync(name, metadata)

    async def ensure_payload_indexes(self, name: str, fields: dict[str, models.PayloadSchemaType]) -> None:
        await self._shard(name)
        await asyncio.to_thread(self.index_sync, name, fields)

    # --- points ----------------------------------------------------------------------------
    async def upsert(self, name: str, points: list[models.PointStruct]) -> None:
        if points:
            op = qe.UpdateOperation.upsert_points([cv.to_point(p) for p in points])
            await self._run(name, qe.EdgeShard.update, op)

    async def set_payload(self, name: str, payload: dict[str, Any], flt: models.Filter) -> None:
        op = qe.UpdateOperation.set_payload_by_filter(cv.to_filter(flt), payload)
        await self._run(name, qe.EdgeShard.update, op)

    async def delete_ids(self, name: str, ids: list[str]) -> None:
        if ids:
            await self._run(name, qe.EdgeShard.update, qe.UpdateOperation.delete_points([str(i) for i in ids]))

    async def delete_where(self, name: str, flt: models.Filter) -> None:
        await self._run(name, qe.EdgeShard.update, qe.UpdateOperation.delete_points_by_filter(cv.to_filter(flt)))

    async def count(self, name: str, flt: models.Filter | None = None) -> int:
        return await self._run(name, qe.EdgeShard.count, qe.CountRequest(exact=True, filter=cv.to_filter(flt)))

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
        request = qe.ScrollRequest(
            offset=str(offset) if offset is not None else None, limit=limit, filter=cv.to_filter(scroll_filter),
            with_payload=cv.with_payload(with_payload), with_vector=cv.with_payload(with_vectors),
        )
        records, next_offset = await self._run(name, qe.EdgeShard.scroll, request)
        return [cv.from_record(r) for r in records], (str(next_offset) if next_offset is not None else None)

    async def retrieve(self, name: str, ids: list[str], *, with_payload: WithPayload = True) -> list[models.Record]:
        if not ids:
            return []
        records = await self._run(
            name, qe.EdgeShard.retrieve, [str(i) for i in ids], cv.with_payload(with_payload), False
        )
        return [cv.from_record(r) for r in records]

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
        request = qe.QueryRequest(
            limit=limit,
            query=cv.to_query(query, using),
            prefetches=[cv.to_prefetch(p) for p in prefetch] if prefetch else None,
            filter=cv.to_filter(query_filter),
            with_payload=cv.with_payload(with_payload),
            with_vector=cv.with_payload(with_vectors),
        )
        return [cv.from_scored(p) for p in await self._run(name, qe.EdgeShard.query, request)]

    async def optimize(self, name: str) -> None:
        await self._run(name, qe.EdgeShard.optimize)

    async def close(self) -> None:
        shards, self._shards = list(self._shards.values()), {}
        for shard in shards:
            await asyncio.to_thread(shard.close)
        if self._lock is not None:
            self._lock.release()
            self._lock = None
