"""Searches while a file is replaced, in the same process (the bot running a handed-over
ingest): every search finds the file, old or new, never neither and never both. A search
that read the version record just before a switch must not query after the old version's
deletion with a filter that still hides the new one (agent/store/readers.py)."""

from __future__ import annotations

import asyncio

from agent.config import Settings
from agent.knowledge import ingest as ingest_module
from agent.knowledge.ingest import ingest
from agent.knowledge.search import SearchFilters, search
from agent.runtime import Runtime
from agent.store.readers import Readers
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.test_ingest_atomic import document


async def test_a_writer_waits_for_the_searches_that_read_the_previous_record():
    readers = Readers()
    order: list[str] = []

    async def slow_search() -> None:
        with readers.reading():
            await asyncio.sleep(0.2)
            order.append("search")

    task = asyncio.create_task(slow_search())
    await asyncio.sleep(0)  # the search has started
    await readers.advance()
    order.append("writer")
    await task
    assert order == ["search", "writer"]
    await asyncio.wait_for(readers.advance(), 1)  # no search in flight: no wait


class SlowQueryEmbedder(HashEmbedder):
    """Embedding the question takes a moment, as with a real model: the moment between reading
    the version record and querying in which an ingest can switch and delete."""

    async def embed_query(self, text: str) -> list[float]:
        await asyncio.sleep(0.001)
        return await super().embed_query(text)


async def searched_while_updating(runtime: Runtime, kb, target, probe) -> None:
    """Ingest `kb`, then rewrite `target` eight times (each ingest updating it) while four loops
    run `probe` back to back; the runtime is closed at the end."""
    stop = asyncio.Event()

    async def searcher() -> None:
        while not stop.is_set():
            await probe()
            await asyncio.sleep(0)

    try:
        await ingest(runtime, [kb])
        searchers = [asyncio.create_task(searcher()) for _ in range(4)]
        for i in range(8):
            target.write_text(document("a.md", f"version{'abcdefgh'[i]}"), encoding="utf-8")
            assert (await ingest(runtime, [kb])).updated == ["a.md"]
        stop.set()
        await asyncio.gather(*searchers)
    finally:
        await runtime.close()


async def test_searches_during_updates_always_find_the_file_once(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest_module, "UPSERT_BATCH", 2)
    kb = tmp_path / "kb"
    kb.mkdir()
    target = kb / "a.md"
    target.write_text(document("a.md", "firstversion"), encoding="utf-8")
    (kb / "b.md").write_text(document("b.md", "other"), encoding="utf-8")
    # every chunk its own result (section_chars=0): the probe below reads chunk 9 of each version
    runtime = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False,
                                    section_chars=0))
    runtime._embedders[EMBEDDER] = SlowQueryEmbedder()  # type: ignore[assignment]
    only_a = SearchFilters(source="a.md")
    results: list[set[str]] = []

    async def probe() -> None:
        hits = await search(runtime, "eligibility income", top_k=20, filters=only_a)
        results.append({h.text.rsplit(" ", 1)[-1] for h in hits if h.chunk_index == 9})

    await searched_while_updating(runtime, kb, target, probe)
    assert len(results) > 50
    # each search saw the last chunk of exactly one version of a.md
    assert [r for r in results if len(r) != 1] == []


async def test_a_section_shown_during_updates_is_never_a_mix_of_two_versions(tmp_path, monkeypatch):
    """Section expansion reads the chunks around a match after the match was found: it reads them
    with the same version filter, so no context joins the old and the new file."""
    import re

    monkeypatch.setattr(ingest_module, "UPSERT_BATCH", 2)
    kb = tmp_path / "kb"
    kb.mkdir()
    target = kb / "a.md"
    target.write_text(document("a.md", "firstversion"), encoding="utf-8")
    runtime = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False,
                                    section_chars=20_000))  # the whole file around any match
    runtime._embedders[EMBEDDER] = SlowQueryEmbedder()  # type: ignore[assignment]
    seen: list[set[str]] = []

    async def probe() -> None:
        hits = await search(runtime, "eligibility income", top_k=5, filters=SearchFilters(source="a.md"))
        seen.append({m for h in hits for m in re.findall(r"\b(?:first)?version[a-h]?\b", h.context or h.text)})

    await searched_while_updating(runtime, kb, target, probe)
    assert len(seen) > 50 and all(len(markers) == 1 for markers in seen), [m for m in seen if len(m) != 1][:5]
