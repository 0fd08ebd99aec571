"""One contract, every backend: the store seam (agent/store/base.py) behaves the same on
Qdrant Edge (embedded default) and on the server backend. The server backend runs against
qdrant-client's local mode (the same API in-process; no server binary is installable here),
and against a real Qdrant server when ASKDESK_TEST_QDRANT_URL is set."""

from __future__ import annotations

import os
import uuid

import pytest
from qdrant_client import AsyncQdrantClient
from qdrant_client import models as qdrant_models

import agent.store.models as models
from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.knowledge.search import SearchFilters, search
from agent.runtime import Runtime
from agent.store.edge import EdgeStore, InvalidCollectionName
from agent.store.server import ServerStore
from tests.conftest import SAMPLE_KB, seed_embeddings

BACKENDS = ["edge", "local-mode", "server"]


def make_store(kind: str, tmp_path):
    if kind == "edge":
        return EdgeStore.open(tmp_path / "data")
    if kind == "local-mode":
        return ServerStore(AsyncQdrantClient(path=str(tmp_path / "local")), where="local", payload_indexes=False)
    url = os.environ.get("ASKDESK_TEST_QDRANT_URL")
    if not url:
        pytest.skip("set ASKDESK_TEST_QDRANT_URL to run the contract against a real Qdrant server")
    return ServerStore.connect(url)


@pytest.fixture(params=BACKENDS)
async def store(request, tmp_path):
    s = make_store(request.param, tmp_path)
    yield s
    await s.close()


def _name() -> str:
    return f"contract_{uuid.uuid4().hex[:8]}"  # unique: a real server is shared between runs


def _pid(i: int) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"p{i}"))


def _points() -> list[models.PointStruct]:
    """Ten points on a line of 4-d vectors; sparse term 7 in every point, term i in point i."""
    out = []
    for i in range(10):
        out.append(models.PointStruct(
            id=_pid(i),
            vector={"dense": [1.0, i / 10, 0.5, 0.0],
                    "sparse": models.SparseVector(indices=[7, 100 + i], values=[1.0, 2.0])},
            payload={"source": f"s{i % 3}", "n": i, "even": i % 2 == 0, "tags": ["all", f"t{i}"],
                     "location": {"lat": 30.0 + i * 0.01, "lon": -97.7}},
        ))
    return out


async def _filled(store) -> str:
    name = _name()
    await store.create_collection(name, dim=4, metadata={"embedder": "test", "dim": 4})
    await store.ensure_payload_indexes(name, {
        "source": models.PayloadSchemaType.KEYWORD, "n": models.PayloadSchemaType.INTEGER,
        "even": models.PayloadSchemaType.BOOL, "location": models.PayloadSchemaType.GEO,
    })
    await store.upsert(name, _points())
    return name


def _match(key, value):
    return models.FieldCondition(key=key, match=models.MatchValue(value=value))


async def test_collections_and_metadata(store):
    name = _name()
    assert not await store.collection_exists(name) and await store.collection_metadata(name) is None
    await store.create_collection(name, dim=4, metadata={"embedder": "e1", "dim": 4})
    assert await store.collection_exists(name)
    assert (await store.collection_metadata(name))["embedder"] == "e1"
    await store.update_metadata(name, {"embedder": "e2", "dim": 4})
    assert (await store.collection_metadata(name))["embedder"] == "e2"
    fields = {"source": models.PayloadSchemaType.KEYWORD}
    await store.ensure_payload_indexes(name, fields)
    await store.ensure_payload_indexes(name, fields)  # idempotent
    assert await store.count(name) == 0


async def test_metadata_merges_key_by_key_and_none_removes_a_key(store):
    """The file-version record (agent/knowledge/versions.py) relies on this: one update shows
    one version and hides others, and leaves every other key alone."""
    name = _name()
    await store.create_collection(name, dim=4, metadata={"embedder": "e1", "dim": 4})
    await store.update_metadata(name, {"hidden:v1": {"source": "a.md", "state": "pending"}})
    await store.update_metadata(name, {"hidden:v1": None, "hidden:v0": {"source": "a.md", "state": "superseded"}})
    meta = await store.collection_metadata(name)
    assert meta == {"embedder": "e1", "dim": 4, "hidden:v0": {"source": "a.md", "state": "superseded"}}


async def test_set_payload_by_filter(store):
    name = await _filled(store)
    versionless = models.Filter(must=[models.IsEmptyCondition(is_empty=models.PayloadField(key="version"))])
    assert await store.count(name, versionless) == 10
    await store.set_payload(name, {"version": "v1"}, models.Filter(must=[_match("source", "s0")]))
    assert await store.count(name, models.Filter(must=[_match("version", "v1")])) == 4
    assert await store.count(name, versionless) == 6
    hidden = models.Filter(must_not=[models.FieldCondition(key="version", match=models.MatchAny(any=["v1"]))])
    assert await store.count(name, hidden) == 6  # points without the field are not excluded


async def test_writes_counts_scroll_and_retrieve(store):
    name = await _filled(store)
    assert await store.count(name) == 10
    await store.upsert(name, _points()[:3])  # same ids: replaced, not added
    assert await store.count(name) == 10
    assert await store.count(name, models.Filter(must=[_match("source", "s0")])) == 4

    seen, offset = [], None
    while True:
        page, offset = await store.scroll(name, limit=4, offset=offset, with_payload=["n"])
        seen += page
        if offset is None:
            break
    assert sorted(p.payload["n"] for p in seen) == list(range(10)) and set(seen[0].payload) == {"n"}
    assert all(isinstance(p.id, str) for p in seen)

    got = await store.retrieve(name, [_pid(2), _pid(5)], with_payload=["source"])
    assert sorted(p.id for p in got) == sorted([_pid(2), _pid(5)]) and got[0].payload.keys() == {"source"}

    await store.delete_ids(name, [_pid(0)])
    # delete s1 points except n == 4: keeps exactly one of them (the "keep this version" pattern)
    await store.delete_where(name, models.Filter(must=[_match("source", "s1")], must_not=[_match("n", 4)]))
    left = sorted(p.payload["n"] for p in (await store.scroll(name, limit=100, with_payload=["n"]))[0])
    assert left == [2, 3, 4, 5, 6, 8, 9]


async def test_filters_bool_range_any_and_geo(store):
    name = await _filled(store)
    even = models.Filter(must=[_match("even", True)])
    assert await store.count(name, even) == 5
    assert await store.count(name, models.Filter(must=[_match("even", False)])) == 5
    rng = models.Filter(must=[models.FieldCondition(key="n", range=models.Range(gte=3, lt=6))])
    assert await store.count(name, rng) == 3
    anyf = models.Filter(must=[models.FieldCondition(key="tags", match=models.MatchAny(any=["t1", "t2"]))])
    assert await store.count(name, anyf) == 2
    assert await store.count(name, models.Filter(must=[_match("tags", "all")])) == 10
    near = models.Filter(must=[models.FieldCondition(key="location", geo_radius=models.GeoRadius(
        center=models.GeoPoint(lat=30.0, lon=-97.7), radius=2500.0))])  # 0.01 deg lat ~ 1.1 km
    assert await store.count(name, near) == 3


async def test_dense_sparse_and_fused_queries(store):
    name = await _filled(store)
    dense = await store.query_points(name, query=[1.0, 0.9, 0.5, 0.0], using="dense", limit=3,
                                     with_vectors=["dense"], with_payload=True)
    assert dense[0].id == _pid(9) and dense[0].score > dense[1].score
    assert len(dense[0].vector["dense"]) == 4 and dense[0].payload["n"] == 9

    sparse = await store.query_points(name, query=models.SparseVector(indices=[103], values=[1.0]),
                                      using="sparse", limit=3)
    assert [p.id for p in sparse] == [_pid(3)]

    flt = models.Filter(must=[_match("even", True)])
    fused = await store.query_points(
        name,
        prefetch=[
            models.Prefetch(query=[1.0, 0.3, 0.5, 0.0], using="dense", limit=5, filter=flt),
            models.Prefetch(query=models.SparseVector(indices=[106], values=[1.0]), using="sparse", limit=5,
                            filter=flt),
        ],
        query=models.RrfQuery(rrf=models.Rrf(k=2, weights=[1.0, 1.0])),
        limit=3, with_payload=["n"],
    )
    assert fused and all(p.payload["n"] % 2 == 0 for p in fused)
    assert {p.payload["n"] for p in fused} & {2, 6}  # the dense and the sparse favourite
    filtered = await store.query_points(name, query=[1.0, 0.9, 0.5, 0.0], using="dense", query_filter=flt, limit=2)
    assert [p.id for p in filtered] == [_pid(8), _pid(6)]


async def test_results_are_the_seams_models_and_qdrant_client_models_are_taken_too(store):
    """Code above the seam builds agent/store/models.py's types and reads them back on either
    backend; a request written with qdrant-client's own models means the same."""
    name = await _filled(store)
    page, _ = await store.scroll(name, limit=2, with_vectors=True)
    assert all(isinstance(p, models.Record) for p in page)
    assert isinstance(page[0].vector["sparse"], models.SparseVector)
    hits = await store.query_points(name, query=[1.0, 0.9, 0.5, 0.0], using="dense", limit=2)
    assert all(isinstance(p, models.ScoredPoint) for p in hits)

    theirs = qdrant_models.Filter(must=[
        qdrant_models.FieldCondition(key="n", range=qdrant_models.Range(gte=3, lt=6)),
        qdrant_models.FieldCondition(key="source", match=qdrant_models.MatchExcept(**{"except": ["s1"]})),
    ])
    ours = models.Filter(must=[
        models.FieldCondition(key="n", range=models.Range(gte=3, lt=6)),
        models.FieldCondition(key="source", match=models.MatchExcept(except_=["s1"])),
    ])
    assert await store.count(name, theirs) == await store.count(name, ours) == 2
    sparse = await store.query_points(name, query=qdrant_models.SparseVector(indices=[103], values=[1.0]),
                                      using="sparse", limit=3)
    assert [p.id for p in sparse] == [_pid(3)]


def test_edge_refuses_collection_names_that_are_not_plain_directory_names(tmp_path):
    import asyncio

    store = EdgeStore.open(tmp_path / "data")
    try:
        for bad in ("../outside", "a/b", "", ".hidden"):
            with pytest.raises(InvalidCollectionName):
                asyncio.run(store.create_collection(bad, dim=4, metadata={}))
        assert not (tmp_path / "outside").exists()
    finally:
        asyncio.run(store.close())


@pytest.mark.parametrize("kind", BACKENDS)
async def test_ingest_and_hybrid_search_are_unaware_of_the_backend(kind, tmp_path):
    settings = Settings(data_dir=seed_embeddings(tmp_path / "seeded"))
    runtime = Runtime(settings=settings, store=make_store(kind, tmp_path))
    name = _name()
    try:
        report = await ingest(runtime, [SAMPLE_KB / "trs-parent-brochure-spa-qa.md",
                                        SAMPLE_KB / "bcy2025-psoc-chart-twc-qa.md"], collection=name)
        assert report.chunks_written == report.chunks > 0
        hits = await search(runtime, "Texas Rising Star calidad", top_k=3, collection=name)
        assert hits[0].source == "trs-parent-brochure-spa-qa.md" and hits[0].dense_score is not None
        only = await search(runtime, "weekly", collection=name,
                            filters=SearchFilters(source="bcy2025-psoc-chart-twc-qa.md"))
        assert only and {p.source for p in only} == {"bcy2025-psoc-chart-twc-qa.md"}
        assert (await ingest(runtime, [SAMPLE_KB / "trs-parent-brochure-spa-qa.md"], collection=name)).updated == []
    finally:
        await runtime.close()
