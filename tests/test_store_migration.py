"""A data dir built by the old embedded store (qdrant-client's local mode under
`<data_dir>/qdrant/`) is moved into Qdrant Edge the first time it is opened: same points,
same vectors (nothing re-embedded), searches and re-ingest behave as before."""

from __future__ import annotations

import shutil

from qdrant_client import AsyncQdrantClient

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.knowledge.search import search
from agent.runtime import Runtime
import agent.store.models as models
from agent.store.migrate import MIGRATED_DIR
from agent.store.server import ServerStore
from tests.knowledge_fixtures import ingest_demo_registry
from tests.conftest import SAMPLE_FACILITIES, SAMPLE_KB, seed_embeddings

DOCS = ["bcy2025-psoc-chart-twc-qa.md", "trs-parent-brochure-spa-qa.md"]


def old_local_mode_runtime(settings: Settings) -> Runtime:
    """What askdesk opened before Qdrant Edge: qdrant-client local mode in <data_dir>/qdrant."""
    path = settings.data_dir / "qdrant"
    path.mkdir(parents=True, exist_ok=True)
    store = ServerStore(AsyncQdrantClient(path=str(path)), where=str(path), payload_indexes=False)
    return Runtime(settings=settings, store=store)


async def test_an_old_local_mode_data_dir_is_migrated_on_first_open(tmp_path, capfd):
    settings = Settings(data_dir=seed_embeddings(tmp_path / "data"))
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in DOCS:
        shutil.copy(SAMPLE_KB / name, kb / name)
    old = old_local_mode_runtime(settings)
    try:
        report = await ingest(old, [kb])
        await ingest_demo_registry(old)
        before = await search(old, "Texas Rising Star", top_k=3)
    finally:
        await old.close()

    runtime = Runtime.open(settings)  # migrates
    try:
        err = capfd.readouterr().err
        # kb, facilities, and kb's statistics log (written because local mode is not exclusive)
        assert "moving" in err and "moved 3 collection(s)" in err and MIGRATED_DIR in err
        assert await runtime.store.count("kb") == report.chunks
        assert await runtime.store.count("facilities") == 121
        after = await search(runtime, "Texas Rising Star", top_k=3)
        assert [p.source for p in after] == [p.source for p in before]
        rerun = await ingest(runtime, [kb])
        assert rerun.updated == [] and rerun.chunks_written == 0  # same ids, hashes and embedder
        again = await ingest_demo_registry(runtime)
        assert again.unchanged == 121
    finally:
        await runtime.close()
    assert not (settings.data_dir / "qdrant").exists() and (settings.data_dir / MIGRATED_DIR).is_dir()
    await Runtime.open(settings).close()  # a second open does nothing more
    assert "moving" not in capfd.readouterr().err


def test_the_migration_indexes_what_the_knowledge_layer_indexes():
    """The store layer names the knowledge collection's indexed fields itself (it imports nothing
    above it); they must stay the knowledge layer's."""
    from agent.knowledge.store import INDEXED_FIELDS
    from agent.store.migrate import KNOWLEDGE_INDEXED

    assert set(KNOWLEDGE_INDEXED) == set(INDEXED_FIELDS)
    assert {str(v) for v in INDEXED_FIELDS.values()} == {str(models.PayloadSchemaType.KEYWORD)}
