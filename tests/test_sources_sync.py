"""The sync engine on folder sources: incremental, resumable, each source seen only by its
audience, a broken source never stops the others; sources.yaml and plug-in loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import agent.store.models as models
from agent.audience import viewer_keys, viewing
from agent.config import Settings
from agent.knowledge.search import search
from agent.plugins import load_plugins
from agent.runtime import Runtime
from agent.sources.config import SourcesFileError, load_sources
from agent.sources.folder import FolderSource
from agent.sources.sync import open_state, sync_all
from tests.conftest import REPO
from tests.crash_child import EMBEDDER, HashEmbedder


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def org(tmp_path):
    docs, hr = tmp_path / "docs", tmp_path / "hr"
    write(docs / "leave.md", "# Leave policy\n\n## Parental leave\n\nStaff get sixteen weeks of paid parental leave.\n")
    write(docs / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at forty cents a mile.\n")
    write(hr / "panel.md", "# Panel\n\n## Disciplinary\n\nThe disciplinary panel meets on Tuesdays.\n")
    sources = tmp_path / "sources.yaml"
    sources.write_text(f"""sources:
  - name: handbook
    kind: folder
    path: {docs}
  - name: hr
    kind: folder
    path: {hr}
    url_base: https://intranet.acme.example/hr
    audience: [C0HR, Boss@Acme.example]
""", encoding="utf-8")
    return tmp_path


@pytest.fixture
async def runtime(org):
    settings = Settings(data_dir=org / "data", sources=org / "sources.yaml", embedder=EMBEDDER)
    rt = Runtime.open(settings)
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    yield rt
    await rt.close()


def kinds():
    return {"folder": FolderSource}


async def sync(runtime, **kw):
    return await sync_all(runtime, sources=load_sources(runtime.settings, kinds()), **kw)


async def sources_found(runtime, query, keys=None):
    with viewing(keys):
        return {p.source for p in await search(runtime, query, top_k=5)}


async def test_first_sync_then_nothing_to_do(runtime):
    first = {r.source: r for r in await sync(runtime)}
    assert (len(first["handbook"].added), len(first["hr"].added)) == (2, 1)
    again = {r.source: r for r in await sync(runtime)}
    assert [(r.unchanged, r.added, r.changed, r.removed, r.embedded) for r in again.values()] == \
        [(2, [], [], [], 0), (1, [], [], [], 0)]


async def test_changed_renamed_and_deleted_files_reach_the_index(runtime, org):
    await sync(runtime)
    write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
    (org / "docs" / "leave.md").rename(org / "docs" / "parental-leave.md")
    (org / "hr" / "panel.md").unlink()
    reports = {r.source: r for r in await sync(runtime)}
    assert reports["handbook"].changed == ["Travel"] and reports["handbook"].added == ["Leave policy"]
    assert reports["handbook"].removed == ["Leave policy"] and reports["hr"].removed == ["Panel"]
    found = await search(runtime, "mileage repaid cents", top_k=5)
    texts = [p.text for p in found if "Mileage" in p.text]
    assert texts == ["Mileage is repaid at fifty cents a mile."]  # one version, the new one
    assert "@handbook/parental-leave.md" in await sources_found(runtime, "parental leave weeks")
    assert "@hr/panel.md" not in await sources_found(runtime, "disciplinary panel Tuesdays")


@pytest.mark.parametrize("keys, sees_hr", [
    (None, True),  # the terminal: unrestricted
    (viewer_keys(channel="C0HR"), True),
    (viewer_keys(channel="C0ALL"), False),
    (viewer_keys(channel="C0HR", user="U1", email="someone@acme.example", private=True), False),
    (viewer_keys(channel="C0ALL", user="U2", email="boss@ACME.example", private=True), True),
    (viewer_keys(user="U3", email="other@acme.example"), False),
])
async def test_each_source_is_seen_only_by_its_audience(runtime, keys, sees_hr):
    await sync(runtime)
    found = await sources_found(runtime, "disciplinary panel Tuesdays", keys)
    assert ("@hr/panel.md" in found) is sees_hr
    assert "@handbook/leave.md" in await sources_found(runtime, "parental leave weeks", keys)


async def test_citations_carry_the_link_and_the_audience_follows_the_yaml(runtime, org):
    await sync(runtime)
    (passage,) = [p for p in await search(runtime, "disciplinary panel", top_k=5) if p.source == "@hr/panel.md"]
    assert passage.url == "https://intranet.acme.example/hr/panel.md" and passage.title == "Panel"
    yaml_text = (org / "sources.yaml").read_text().replace("[C0HR, Boss@Acme.example]", "[C0ALL]")
    (org / "sources.yaml").write_text(yaml_text)
    (report,) = [r for r in await sync(runtime) if r.source == "hr"]
    assert report.changed == ["Panel"] and report.embedded == 0  # new payload, same vectors (cache)
    assert "@hr/panel.md" in await sources_found(runtime, "disciplinary panel Tuesdays", viewer_keys(channel="C0ALL"))
    assert "@hr/panel.md" not in await sources_found(runtime, "disciplinary panel Tuesdays", viewer_keys(channel="C0HR"))


async def test_a_broken_source_keeps_its_last_copy_and_the_others_go_on(runtime, org):
    await sync(runtime)
    (org / "hr" / "panel.md").rename(org / "panel.md")
    (org / "hr").rmdir()
    write(org / "docs" / "new.md", "# Parking\n\n## Permits\n\nParking permits cost ten dollars.\n")
    reports = {r.source: r for r in await sync(runtime)}
    assert reports["hr"].error == f"source 'hr': {org / 'hr'} is not a folder"
    assert reports["handbook"].added == ["Parking"]
    assert "@hr/panel.md" in await sources_found(runtime, "disciplinary panel Tuesdays")  # last good copy
    state = open_state(runtime)
    try:
        assert state.source("hr").last_error == reports["hr"].error
    finally:
        state.close()


async def test_a_source_no_longer_declared_is_removed(runtime, org):
    await sync(runtime)
    text = (org / "sources.yaml").read_text()
    (org / "sources.yaml").write_text(text[:text.index("  - name: hr")])
    await sync(runtime)
    assert "@hr/panel.md" not in await sources_found(runtime, "disciplinary panel Tuesdays")


async def test_kill_9_mid_sync_resumes_without_two_versions(tmp_path):
    docs = tmp_path / "docs"
    for i in range(6):
        write(docs / f"doc{i}.md", f"# Doc {i}\n\n## Part\n\nTopic number {i} says token{i}.\n")
    data = tmp_path / "data"
    child = subprocess.run([sys.executable, "-m", "tests.sync_child", str(data), str(docs), "doc4.md"], cwd=REPO,
                           capture_output=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    settings = Settings(data_dir=data, embedder=EMBEDDER, embedding_cache=False)
    rt = Runtime.open(settings)
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    try:
        from agent.sources.folder import FolderConfig

        source = FolderSource(FolderConfig(name="docs", kind="folder", path=docs))
        (report,) = await sync_all(rt, sources=[source])
        assert report.unchanged == 4 and sorted(report.added) == ["Doc 4", "Doc 5"]  # resumed, not restarted
        points, _ = await rt.store.scroll(rt.settings.collection, limit=100, with_payload=True)
        keys = sorted(p.payload["source"] for p in points)
        assert keys == [f"@docs/doc{i}.md" for i in range(6)]  # each once: one version, one chunk
    finally:
        await rt.close()


def test_sources_yaml_mistakes_are_one_line(tmp_path):
    settings = Settings(data_dir=tmp_path, sources=tmp_path / "s.yaml")
    cases = {
        "sources:\n  - {name: a, kind: wiki}\n": "source 'a' has unknown kind 'wiki' (known: folder)",
        "sources:\n  - {name: a, kind: folder, path: /x, colour: red}\n": "source 'a': colour: Extra inputs are not permitted",
        "sources:\n  - {name: a, kind: folder, path: /x}\n  - {name: a, kind: folder, path: /y}\n": "two sources are named 'a'",
        "sources:\n  - {name: a, kind: folder, path: /x, audience: from_source}\n": "cannot read audiences",
        "sources: nope\n": "expected a top-level `sources:` list",
    }
    for text, message in cases.items():
        (tmp_path / "s.yaml").write_text(text)
        with pytest.raises(SourcesFileError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_sources(settings, kinds())
    with pytest.raises(SourcesFileError, match="no such file"):
        load_sources(Settings(data_dir=tmp_path, sources=tmp_path / "missing.yaml"), kinds())


class _EntryPoint:
    def __init__(self, name, module):
        self.name, self.value, self.dist, self._module = name, module, None, module

    def load(self):
        import importlib

        return importlib.import_module(self._module)


def test_a_broken_plugin_is_one_line_and_the_others_load(caplog):
    registrar = load_plugins([_EntryPoint("broken", "tests.no_such_plugin"), _EntryPoint("folder", "agent.sources.folder")])
    assert list(registrar.sources) == ["folder"]
    assert [f[0] for f in registrar.failed] == ["broken"]
    lines = [r.getMessage() for r in caplog.records if r.name == "askdesk.plugins"]
    assert lines == ["plug-in broken (?) was not loaded: ModuleNotFoundError: No module named 'tests.no_such_plugin'"]


def test_askdesk_plugins_sync_and_sources_from_the_command_line(org):
    env = {**os.environ, "ASKDESK_DATA_DIR": str(org / "data"), "ASKDESK_SOURCES": str(org / "sources.yaml")}
    run = lambda *args: subprocess.run([str(REPO / ".venv" / "bin" / "askdesk"), *args], cwd=REPO, env=env,  # noqa: E731
                                       capture_output=True, text=True, timeout=120)
    plugins = json.loads(run("plugins", "--json").stdout)
    (folder,) = [row for row in plugins["loaded"] if row["name"] == "folder"]
    assert (folder["kind"], folder["package"], folder["missing"]) == ("source", "askdesk", [])
    synced = run("sync", "--json")
    assert synced.returncode == 0, synced.stderr
    assert [(r["source"], len(r["added"])) for r in json.loads(synced.stdout)] == [("handbook", 2), ("hr", 1)]
    rows = json.loads(run("sources", "--json").stdout)
    assert [(r["name"], r["documents"], r["audience"], r["last_error"]) for r in rows] == \
        [("handbook", 2, "everyone", None), ("hr", 1, ["C0HR", "Boss@Acme.example"], None)]
    unknown = run("sync", "nope")
    assert unknown.returncode == 2 and unknown.stderr.strip().startswith("error: no source named 'nope'")


async def test_askdesk_sync_is_handed_to_the_running_bot(org, tmp_path, monkeypatch):
    """While `askdesk serve` holds the store, `askdesk sync` (the real console script) has the
    bot run it, through the admin channel."""
    from bot.admin.channel import AdminChannel
    from tests.test_store_concurrency import cli_env, run_cli

    runtime_dir = tmp_path / "run"
    runtime_dir.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime_dir))
    settings = Settings(data_dir=org / "data", sources=org / "sources.yaml")
    runtime = Runtime.open(settings)
    channel = await AdminChannel.start(settings, runtime)
    try:
        env = {**cli_env(org / "data"), "ASKDESK_SOURCES": str(org / "sources.yaml")}
        code, out, err = await run_cli(["sync", "--json"], env, timeout=240)
        assert code == 0 and "the running bot" in err, err
        assert [(r["source"], len(r["added"])) for r in json.loads(out)] == [("handbook", 2), ("hr", 1)]
        assert "@hr/panel.md" in await sources_found(runtime, "disciplinary panel Tuesdays")
    finally:
        await channel.close()
        await runtime.close()


async def test_serve_syncs_each_source_when_its_interval_has_passed(runtime, org, monkeypatch):
    import time

    from agent.sources import schedule
    from agent.sources import sync as sync_module

    monkeypatch.setattr(schedule, "load_sources", lambda settings: load_sources(settings, kinds()))
    text = (org / "sources.yaml").read_text().replace("    audience: [C0HR", "    interval_minutes: 5\n    audience: [C0HR")
    (org / "sources.yaml").write_text(text)  # hr every 5 minutes, handbook every 60 (the default)
    synced: list[str] = []
    real = sync_module.sync_source

    async def counting(rt, source, state, **kw):
        synced.append(source.name)
        return await real(rt, source, state, **kw)

    monkeypatch.setattr(schedule, "sync_source", counting)
    now = time.time()
    assert await schedule.sync_due(runtime, now=now) == 300 and synced == ["handbook", "hr"]
    assert await schedule.sync_due(runtime, now=now + 60) == pytest.approx(240, abs=2) and synced == ["handbook", "hr"]
    await schedule.sync_due(runtime, now=now + 330)
    assert synced == ["handbook", "hr", "hr"]
    await schedule.sync_due(runtime, now=now + 3630)
    assert synced == ["handbook", "hr", "hr", "handbook", "hr"]


async def test_a_learned_answer_from_a_restricted_channel_keeps_its_audience(runtime, tmp_path):
    from datetime import datetime

    from agent.knowledge.ingest import ingest
    from agent.knowledge.learned import save

    folder = tmp_path / "learned"
    name, _ = await save(runtime, folder, key="k1", question="Who chairs the grievance board?",
                         answer="Grievances go to the Zanzibar board, chaired by HR.", expert="Ana",
                         when=datetime(2026, 11, 1), audience=["C0HR"])
    assert await sources_found(runtime, "Zanzibar grievance board", viewer_keys(channel="C0HR")) == {name}
    assert await sources_found(runtime, "Zanzibar grievance board", viewer_keys(channel="C0ALL")) == set()
    await ingest(runtime, [folder])  # re-ingesting the folder keeps it (the audience is in the file)
    assert await sources_found(runtime, "Zanzibar grievance board", viewer_keys(channel="C0ALL")) == set()


async def test_save_as_answer_from_a_restricted_channel_stays_there(runtime):
    """The service's "Save as answer": a question asked in a channel some source is limited to
    (C0HR) gives an answer only that channel sees; one asked in #general is everyone's."""
    from datetime import datetime

    from agent.capabilities.knowledge import KnowledgeCapability
    from agent.capabilities.loader import capabilities_from
    from agent.plugins import Registrar
    from agent.providers.models import ServiceModels
    from agent.sources.config import restricted_places
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk

    assert restricted_places(runtime.settings) == {"C0HR"}  # not the email in the same list
    r = Registrar()
    r.capability(KnowledgeCapability)
    with capabilities_from(r):
        askdesk = Askdesk(runtime.settings, runtime, state=MemoryState(),
                          models=ServiceModels(router=None, agent=None, notice=None))
    when = datetime(2026, 11, 2)
    hr = await askdesk.save_learned(key="e1", question="Who chairs the grievance board?", expert="Ana", when=when,
                                    answer="The Zanzibar board, chaired by HR.", asked_in="C0HR")
    everyone = await askdesk.save_learned(key="e2", question="Where is the canteen?", expert="Bo", when=when,
                                          answer="The Quokka canteen is on floor 2.", asked_in="C0ALL")
    assert hr not in await sources_found(runtime, "Zanzibar grievance board", viewer_keys(channel="C0ALL"))
    assert hr in await sources_found(runtime, "Zanzibar grievance board", viewer_keys(channel="C0HR"))
    assert everyone in await sources_found(runtime, "Quokka canteen floor", viewer_keys(channel="C0ALL"))
    await askdesk.close()
