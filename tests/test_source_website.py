"""The website source against a local web server: sitemap and crawl, same origin, robots.txt,
conditional requests, removals, throttling; synced, searched and cited with the page's link."""

from __future__ import annotations

import pytest

from agent.config import Settings
from agent.knowledge.search import search
from agent.runtime import Runtime
from agent.sources.http import SourceHTTP
from agent.sources.sync import sync_all
from agent.sources.website import USER_AGENT, WebsiteConfig, WebsiteSource
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.website import FakeWebsite, Page

LONG = "Staff get sixteen weeks of paid parental leave when a child is born or adopted, and may split it. " * 3


@pytest.fixture
async def site():
    fake = await FakeWebsite().start()
    fake.html("/", "Intranet", f"<p>{LONG}</p>", links=["/leave", "/travel", "/private/salaries",
                                                          "https://elsewhere.example/x", "/forms/claim.md"])
    fake.html("/leave", "Leave policy", f'<h2 id="parental">Parental leave</h2><p>{LONG}</p>', etag='"v1"', links=["/"])
    fake.html("/travel", "Travel", "<h2>Mileage</h2><p>Mileage is repaid at forty cents a mile on every trip "
              "staff make for work, with receipts kept for a year.</p>" * 2, etag='"t1"')
    fake.html("/private/salaries", "Salaries", "<p>secret</p>")
    fake.pages["/forms/claim.md"] = Page(b"# Claim form\n\n## How\n\nClaims go to finance by the 5th.\n", "text/markdown")
    yield fake
    await fake.stop()


@pytest.fixture
async def runtime(tmp_path):
    rt = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER))
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    yield rt
    await rt.close()


def source(url: str, waits: list | None = None) -> WebsiteSource:
    async def sleep(seconds: float) -> None:
        (waits if waits is not None else []).append(seconds)

    config = WebsiteConfig(name="intranet", kind="website", url=url)
    return WebsiteSource(config, SourceHTTP("intranet", headers={"User-Agent": USER_AGENT}, sleep=sleep))


async def test_crawl_stays_on_the_site_and_honours_robots(site, runtime):
    (report,) = await sync_all(runtime, sources=[source(site.url + "/")])
    assert report.error is None
    assert sorted(report.added) == ["Claim form", "Intranet", "Leave policy", "Travel"]
    fetched = {path for _, path, _ in site.requests}
    assert "/private/salaries" not in fetched and "/robots.txt" in fetched
    passage = [p for p in await search(runtime, "mileage repaid cents", top_k=5) if p.title == "Travel"][0]
    assert passage.url == site.url + "/travel" and passage.source == f"@intranet/{site.url}/travel"
    assert "Acme intranet" not in passage.text  # the footer is not the page's content
    leave = [p for p in await search(runtime, "parental leave sixteen weeks", top_k=5) if p.title == "Leave policy"][0]
    assert leave.url == site.url + "/leave#parental"  # opens at the section


async def test_unchanged_pages_are_not_fetched_again_and_changes_arrive(site, runtime):
    await sync_all(runtime, sources=[source(site.url + "/")])
    site.requests.clear()
    (again,) = await sync_all(runtime, sources=[source(site.url + "/")])
    assert (again.unchanged, again.embedded) == (4, 0)
    leave = [h for _, p, h in site.requests if p == "/leave"]
    assert leave and leave[0].get("If-None-Match") == '"v1"'  # asked conditionally: 304
    site.html("/travel", "Travel", "<h2>Mileage</h2><p>Mileage is repaid at fifty cents a mile on every trip "
              "staff make for work, with receipts kept for a year.</p>" * 2, etag='"t2"')
    del site.pages["/forms/claim.md"]
    (third,) = await sync_all(runtime, sources=[source(site.url + "/")])
    assert third.changed == ["Travel"] and third.removed == ["Claim form"]
    texts = [p.text for p in await search(runtime, "mileage repaid cents", top_k=5) if p.title == "Travel"]
    assert texts and all("fifty" in t for t in texts)


async def test_a_sitemap_with_lastmod_needs_no_page_request_when_unchanged(site, runtime):
    site.pages["/sitemap.xml"] = Page(f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
  <url><loc>{site.url}/leave</loc><lastmod>2026-11-01</lastmod></url>
  <url><loc>{site.url}/travel</loc><lastmod>2026-10-01</lastmod></url>
  <url><loc>https://elsewhere.example/leave</loc></url>
  <url><loc>{site.url}/private/salaries</loc></url>
</urlset>""".encode(), "application/xml")
    (first,) = await sync_all(runtime, sources=[source(site.url + "/sitemap.xml")])
    assert sorted(first.added) == ["Leave policy", "Travel"]
    site.requests.clear()
    (again,) = await sync_all(runtime, sources=[source(site.url + "/sitemap.xml")])
    assert again.unchanged == 2 and {p for _, p, _ in site.requests} == {"/robots.txt", "/sitemap.xml"}


async def test_throttling_is_waited_out_and_an_unreachable_site_is_one_line(site, runtime):
    site.throttle = 2
    waits: list[float] = []
    (report,) = await sync_all(runtime, sources=[source(site.url + "/", waits)])
    assert report.error is None and waits == [7.0, 7.0]  # Retry-After honoured
    await site.stop()
    (down,) = await sync_all(runtime, sources=[source(site.url + "/", [])])
    assert down.error == f"source 'intranet': cannot reach {site.url} (ConnectError)"
    assert [p.title for p in await search(runtime, "parental leave weeks", top_k=5)]  # last good copy
    await site.start()  # the fixture's stop needs a running server


async def test_robots_disallowing_the_start_page_is_a_clear_error(site, runtime):
    site.robots = "User-agent: askdesk\nDisallow: /\n"
    (report,) = await sync_all(runtime, sources=[source(site.url + "/")])
    assert report.error == f"source 'intranet': robots.txt disallows {site.url}/ for askdesk"
