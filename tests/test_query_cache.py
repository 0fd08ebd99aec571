"""The query embedding cache: a repeated question skips the model, the cache stays bounded,
concurrent identical questions embed once, failures are not cached."""

from __future__ import annotations

import asyncio

import pytest

from agent.config import Settings
from agent.knowledge.query_cache import QueryCachingEmbedder
from agent.runtime import Runtime


class CountingEmbedder:
    name = "counting"
    dim = 3

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.fail = False

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [[1.0, 0.0, 0.0] for _ in texts]

    async def embed_query(self, text: str) -> list[float]:
        self.calls.append(text)
        await asyncio.sleep(0.01)
        if self.fail:
            raise RuntimeError("model down")
        return [float(len(text)), 1.0, 0.0]


async def test_repeated_questions_skip_the_model_and_the_cache_is_bounded():
    inner = CountingEmbedder()
    cached = QueryCachingEmbedder(inner, size=2)
    assert cached.name == "counting" and cached.dim == 3  # attributes pass through
    first = await cached.embed_query("income limit")
    first.append(99.0)  # a caller mutating its copy does not poison the cache
    assert await cached.embed_query("income limit") == [12.0, 1.0, 0.0]
    assert inner.calls == ["income limit"]
    await cached.embed_query("a")
    await cached.embed_query("b")  # evicts "income limit" (least recently used)
    await cached.embed_query("income limit")
    assert inner.calls == ["income limit", "a", "b", "income limit"]


async def test_concurrent_identical_questions_embed_once_and_failures_are_not_cached():
    inner = CountingEmbedder()
    cached = QueryCachingEmbedder(inner, size=8)
    vectors = await asyncio.gather(*(cached.embed_query("same question") for _ in range(10)))
    assert inner.calls == ["same question"] and all(v == vectors[0] for v in vectors)
    inner.fail = True
    with pytest.raises(RuntimeError):
        await cached.embed_query("new one")
    inner.fail = False
    assert await cached.embed_query("new one") == [7.0, 1.0, 0.0]
    assert inner.calls.count("new one") == 2


async def test_runtime_embedders_are_cached_unless_disabled(tmp_path):
    rt = Runtime.open(Settings(data_dir=tmp_path / "a"))
    try:
        assert isinstance(rt.embedder(), QueryCachingEmbedder) and rt.embedder() is rt.embedder()
        vector = await rt.embedder().embed_query("hello")
        assert await rt.embedder().embed_query("hello") == vector and rt.embedder().hits == 1
    finally:
        await rt.close()
    rt = Runtime.open(Settings(data_dir=tmp_path / "b", query_cache_size=0))
    try:
        assert not isinstance(rt.embedder(), QueryCachingEmbedder)
    finally:
        await rt.close()
