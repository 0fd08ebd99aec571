"""Sources declared in sources.yaml, loaded through the plug-in entry points, synced by the
engine against local fakes of Confluence Cloud and Microsoft Graph, then searched: every
passage cites the page's own link, each source is seen only by its audience, and a source
whose credentials are wrong leaves the other one synced and its own last copy searchable."""

from __future__ import annotations

import pytest

from agent.audience import viewer_keys, viewing
from agent.config import Settings
from agent.knowledge.search import search
from agent.runtime import Runtime
from agent.sources.config import load_sources
from agent.sources.sync import sync_all
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.confluence_api import FakeConfluence
from tests.fakes.graph_api import CLIENT_ID, CLIENT_SECRET, HOST, TENANT, FakeGraphAPI


@pytest.fixture
async def services(monkeypatch):
    wiki = await FakeConfluence().start()
    wiki.add_space("HR", "Human Resources")
    wiki.add_page("HR", "Parental leave", "<h2>Eligibility</h2><p>Staff employed for six months may take "
                  "parental leave of sixteen weeks.</p>")
    graph = await FakeGraphAPI().start()
    graph.add_file("Finance/expenses.md", b"# Expenses\n\n## Claims\n\nExpense claims are paid within thirty days.\n")
    monkeypatch.setenv("WIKI_EMAIL", wiki.email)
    monkeypatch.setenv("WIKI_TOKEN", wiki.token)
    monkeypatch.setenv("SHAREPOINT_TENANT_ID", TENANT)
    monkeypatch.setenv("SHAREPOINT_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SHAREPOINT_CLIENT_SECRET", CLIENT_SECRET)
    yield wiki, graph
    await wiki.stop()
    await graph.stop()


@pytest.fixture
async def runtime(tmp_path, services):
    wiki, graph = services
    (tmp_path / "sources.yaml").write_text(f"""sources:
  - name: hr-wiki
    kind: confluence
    url: {wiki.url}
    space: HR
    email_env: WIKI_EMAIL
    token_env: WIKI_TOKEN
    audience: [C0HR, hr@acme.example]
  - name: finance
    kind: sharepoint
    site: "{HOST}:/sites/HR"
    graph_url: {graph.url}
    login_url: {graph.url}
""", encoding="utf-8")
    rt = Runtime.open(Settings(data_dir=tmp_path / "data", sources=tmp_path / "sources.yaml", embedder=EMBEDDER))
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    yield rt
    await rt.close()


async def found(runtime, query, keys=None):
    with viewing(keys):
        return {p.title: p for p in await search(runtime, query, top_k=5)}


async def test_synced_from_the_services_cited_with_their_links_seen_by_their_audience(runtime, services):
    wiki, graph = services
    reports = {r.source: r for r in await sync_all(runtime, sources=load_sources(runtime.settings))}
    assert [(r.error, len(r.added)) for r in reports.values()] == [(None, 1), (None, 1)]
    leave = (await found(runtime, "parental leave sixteen weeks"))["Parental leave"]
    assert leave.url.startswith(wiki.url) and "/spaces/HR/pages/" in leave.url
    expenses = (await found(runtime, "expense claims paid thirty days"))["Expenses"]
    assert expenses.url.startswith("https://") and expenses.url.endswith("expenses.md")  # SharePoint webUrl
    assert "Parental leave" not in await found(runtime, "parental leave sixteen weeks", viewer_keys(channel="C0ALL"))
    assert "Parental leave" in await found(runtime, "parental leave sixteen weeks", viewer_keys(channel="C0HR"))
    dm = viewer_keys(user="U7", email="HR@acme.example", private=True)
    assert "Parental leave" in await found(runtime, "parental leave sixteen weeks", dm)
    assert "Expenses" in await found(runtime, "expense claims paid thirty days", viewer_keys(channel="C0ALL"))


async def test_wrong_credentials_are_one_line_and_the_rest_goes_on(runtime, services, monkeypatch):
    await sync_all(runtime, sources=load_sources(runtime.settings))
    monkeypatch.setenv("WIKI_TOKEN", "wrong")
    graph = services[1]
    graph.add_file("Finance/travel.md", b"# Travel\n\n## Mileage\n\nMileage is repaid at forty cents a mile.\n")
    reports = {r.source: r for r in await sync_all(runtime, sources=load_sources(runtime.settings))}
    assert "401" in reports["hr-wiki"].error and "WIKI_TOKEN" in reports["hr-wiki"].error
    assert "\n" not in reports["hr-wiki"].error and "wrong" not in reports["hr-wiki"].error
    assert reports["finance"].added == ["Travel"]
    assert "Parental leave" in await found(runtime, "parental leave sixteen weeks")  # the last good copy
