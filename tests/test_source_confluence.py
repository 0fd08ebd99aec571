"""The `confluence` source kind against a fake Confluence Cloud site (tests/fakes/confluence_api.py):
listing across result pages, attachments, incremental changes, deletions, and one-line errors."""

from __future__ import annotations

import types

import pytest
from pydantic import ValidationError

from agent.knowledge.loaders import load_bytes
from agent.plugins import load_plugins
from agent.sources import confluence
from agent.sources.base import Listed, SourceError
from agent.sources.confluence import ConfluenceConfig, ConfluenceSource
from tests.fakes.confluence_api import FakeConfluence
from tests.fakes.pdf import make_pdf

EMAIL_ENV, TOKEN_ENV = "ACME_WIKI_EMAIL", "ACME_WIKI_TOKEN"

LEAVE = """<ac:structured-macro ac:name="toc" ac:schema-version="1" ac:macro-id="1"/>
<h2>Eligibility</h2>
<p>Staff employed for 6 months may take parental leave.</p>
<ac:structured-macro ac:name="info" ac:schema-version="1"><ac:parameter ac:name="title">Note</ac:parameter>
<ac:rich-text-body><p>Tell your manager 8 weeks ahead.</p></ac:rich-text-body></ac:structured-macro>
<h2>Pay</h2>
<table><tbody><tr><th>Weeks</th><th>Paid</th></tr><tr><td>1-12</td><td>100%</td></tr>
<tr><td>13-26</td><td>50%</td></tr></tbody></table>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">text</ac:parameter>
<ac:plain-text-body><![CDATA[HR-FORM-7 leave request]]></ac:plain-text-body></ac:structured-macro>
"""


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
async def site():
    fake = await FakeConfluence().start()
    fake.add_space("HR", "Human Resources")
    fake.add_space("IT", "IT Help")
    fake.add_space("FIN", "Finance")
    ids = {}
    ids["home"] = fake.add_page("HR", "HR Home", "<p>Welcome to HR.</p>")
    ids["policies"] = fake.add_page("HR", "Policies", "<p>All our policies.</p>", parent=ids["home"],
                                    labels=("policy",))
    ids["leave"] = fake.add_page("HR", "Parental leave", LEAVE, parent=ids["policies"], labels=("policy",))
    ids["expenses"] = fake.add_page("HR", "Expenses", "<p>Claim within 30 days.</p>", parent=ids["policies"])
    ids["old"] = fake.add_page("HR", "Old travel policy", "<p>Obsolete.</p>", parent=ids["home"],
                               labels=("policy",))
    ids["vpn"] = fake.add_page("IT", "VPN setup", "<h1>VPN</h1><p>Install the client.</p>")
    ids["wifi"] = fake.add_page("IT", "Wi-Fi", "<p>Network: acme-staff.</p>")
    ids["budget"] = fake.add_page("FIN", "Budget 2024", "<p>Not ours to index.</p>")
    ids["handbook"] = fake.add_attachment(ids["policies"], "handbook.pdf",
                                          make_pdf(["Staff handbook: 25 days of annual leave."]), "application/pdf")
    ids["photo"] = fake.add_attachment(ids["home"], "team photo.png", b"\x89PNG\r\n\x1a\n....", "image/png")
    ids["old_form"] = fake.add_attachment(ids["old"], "travel-form.pdf", make_pdf(["Travel form"]),
                                          "application/pdf")
    fake.ids = ids
    yield fake
    await fake.stop()


@pytest.fixture
def env(site, monkeypatch):
    monkeypatch.setenv(EMAIL_ENV, site.email)
    monkeypatch.setenv(TOKEN_ENV, site.token)


@pytest.fixture
async def make(site, env):
    made: list[ConfluenceSource] = []

    def build(**overrides) -> ConfluenceSource:
        keys = dict(name="wiki", kind="confluence", url=site.url, space=["HR", "IT"], email_env=EMAIL_ENV,
                    token_env=TOKEN_ENV)
        source = ConfluenceSource(ConfluenceConfig(**(keys | overrides)), sleep=_recording_sleep(), clock=Clock())
        made.append(source)
        return source

    yield build
    for source in made:
        await source.close()


def _recording_sleep():
    async def sleep(seconds: float) -> None:
        sleep.calls.append(seconds)

    sleep.calls = []
    return sleep


def by_ref(listing) -> dict[str, Listed]:
    return {d.ref: d for d in listing.documents}


async def test_first_listing_pages_through_every_result_page(site, make):
    source = make()
    listing = await source.changes(None)
    ids = site.ids
    assert listing.complete is True and listing.cursor
    docs = by_ref(listing)
    pages = {ids[k] for k in ("home", "policies", "leave", "expenses", "old", "vpn", "wifi")}
    assert pages <= set(docs), "every page of HR and IT is listed"
    assert ids["budget"] not in docs, "a space that is not configured stays out"
    # 7 pages at the site's cap of 3 results per call: three calls, the later ones by cursor
    page_searches = [c for c in site.calls_to("/wiki/rest/api/content/search") if "type = page" in c.query["cql"]]
    assert len(page_searches) == 3
    assert all("cursor" in c.query for c in page_searches[1:])
    assert all(c.auth and c.auth.startswith("Basic ") for c in site.calls)
    leave = docs[ids["leave"]]
    assert leave.version == "1" and leave.title == "Parental leave"
    assert leave.url == f"{site.url}/spaces/HR/pages/{ids['leave']}/Parental+leave"
    assert leave.path == "Human Resources / HR Home / Policies"
    assert docs[ids["vpn"]].path == "IT Help"
    await source.close()


async def test_attachments_are_listed_and_downloaded_with_their_names(site, make):
    source = make()
    listing = await source.changes(None)
    docs = by_ref(listing)
    handbook = docs[site.ids["handbook"]]
    assert handbook.title == "handbook.pdf" and handbook.version == "1"
    assert handbook.url.startswith(f"{site.url}/pages/viewpageattachments.action?pageId={site.ids['policies']}")
    assert handbook.path == "Human Resources / Policies"
    assert site.ids["photo"] not in docs, "images are not documents"
    fetched = await source.read(handbook)
    assert fetched.filename == "handbook.pdf"
    assert fetched.data == site.attachments[site.ids["handbook"]].data
    assert "25 days of annual leave" in load_bytes(fetched.filename, fetched.data).text
    media = site.calls_to("/media/")
    assert media and media[-1].auth is None, "the account's credentials stay on the site, not the media service"
    # a Listed that lost its `extra` (saved by an older engine) still reads: the link is asked for again
    bare = Listed(ref=handbook.ref, version=handbook.version, title=handbook.title)
    assert (await source.read(bare)).data == fetched.data
    assert site.calls_to(f"/wiki/api/v2/attachments/{handbook.ref}")
    await source.close()


async def test_a_page_reads_as_html_with_headings_and_tables_and_its_link(site, make):
    source = make()
    leave = by_ref(await source.changes(None))[site.ids["leave"]]
    fetched = await source.read(leave)
    assert fetched.filename.endswith(".html") and fetched.title == "Parental leave" and fetched.url == leave.url
    call = site.calls_to(f"/wiki/api/v2/pages/{leave.ref}")[-1]
    assert call.query["body-format"] == "export_view"
    doc = load_bytes(fetched.filename, fetched.data)
    assert doc.title == "Parental leave" and doc.url == leave.url
    assert "## Eligibility" in doc.text and "## Pay" in doc.text
    assert "| Weeks | Paid |" in doc.text and "| 13-26 | 50% |" in doc.text
    assert "Tell your manager 8 weeks ahead." in doc.text
    assert "- Eligibility" not in doc.text, "the table of contents is not indexed as a second copy of the headings"
    await source.close()


async def test_storage_format_keeps_code_and_drops_macro_settings(site, make):
    source = make(body_format="storage")
    leave = by_ref(await source.changes(None))[site.ids["leave"]]
    doc = load_bytes(*(lambda f: (f.filename, f.data))(await source.read(leave)))
    assert "HR-FORM-7 leave request" in doc.text
    assert "| 1-12 | 100% |" in doc.text
    assert "language" not in doc.text and "Note" not in doc.text, "a macro's settings are not text"
    await source.close()


async def test_an_edited_page_shows_up_in_the_next_incremental_listing(site, make):
    source = make(full_listing_hours=24)
    first = await source.changes(None)
    site.tick(days=3)
    site.edit_page(site.ids["leave"], body="<h2>Eligibility</h2><p>Staff employed for 3 months.</p>")
    source._clock.t += 600  # ten minutes later: within full_listing_hours, so a change feed
    second = await source.changes(first.cursor)
    assert second.complete is False
    assert by_ref(second)[site.ids["leave"]].version == "2"
    assert 'lastmodified >= "' in site.calls_to("/wiki/rest/api/content/search")[-2].query["cql"]
    fetched = await source.read(by_ref(second)[site.ids["leave"]])
    assert "3 months" in load_bytes(fetched.filename, fetched.data).text
    # days later: the feed holds what changed since a day before the newest change the last one
    # saw (that change itself again, same version: the engine skips it), and nothing older
    site.tick(days=3)
    site.edit_page(site.ids["wifi"], title="Wi-Fi and guests")
    new = site.add_page("IT", "Remote work", "<p>Use the VPN.</p>")
    source._clock.t += 600
    third = await source.changes(second.cursor)
    assert third.complete is False
    docs = by_ref(third)
    assert set(docs) == {site.ids["leave"], site.ids["wifi"], new}
    assert docs[site.ids["leave"]].version == "2"
    assert docs[site.ids["wifi"]].version == "2" and docs[site.ids["wifi"]].title == "Wi-Fi and guests"
    assert docs[new].path == "IT Help" and docs[new].version == "1"
    await source.close()


async def test_an_edit_minutes_later_is_found_whatever_the_accounts_time_zone(site, make):
    """CQL reads dates in the account's zone (UTC-10 on the fake): the listing must still see an
    edit made one minute after the newest change it knew of."""
    source = make(full_listing_hours=24)
    first = await source.changes(None)
    site.tick(minutes=1)
    site.edit_page(site.ids["wifi"], body="<p>Network: acme-staff-2.</p>")
    source._clock.t += 60
    second = await source.changes(first.cursor)
    assert second.complete is False
    assert by_ref(second)[site.ids["wifi"]].version == "2"
    await source.close()


async def test_a_deleted_page_and_its_attachment_are_gone_from_the_next_complete_listing(site, make):
    source = make()  # full_listing_hours: 1
    first = await source.changes(None)
    assert {site.ids["old"], site.ids["old_form"]} <= set(by_ref(first))
    site.tick(minutes=5)
    site.trash_page(site.ids["old"])
    source._clock.t += 600
    feed = await source.changes(first.cursor)
    assert feed.complete is False, "within the hour: a change feed"
    source._clock.t += 3600
    full = await source.changes(feed.cursor)
    assert full.complete is True
    docs = by_ref(full)
    assert site.ids["old"] not in docs and site.ids["old_form"] not in docs
    assert site.ids["leave"] in docs and site.ids["handbook"] in docs
    await source.close()


async def test_full_listing_hours_zero_lists_everything_every_run(site, make):
    source = make(full_listing_hours=0)
    first = await source.changes(None)
    second = await source.changes(first.cursor)
    assert second.complete is True and set(by_ref(second)) == set(by_ref(first))
    await source.close()


async def test_label_and_ancestor_filters_list_completely_with_their_pages_attachments(site, make):
    source = make(labels=["policy"], space="HR")
    first = await source.changes(None)
    assert set(by_ref(first)) == {site.ids[k] for k in ("policies", "leave", "old", "handbook", "old_form")}
    second = await source.changes(first.cursor)
    assert second.complete is True, "a page can leave a filter without changing: always list it all"
    await source.close()
    source = make(ancestor=site.ids["policies"], space="HR")
    listed = set(by_ref(await source.changes(None)))
    assert listed == {site.ids[k] for k in ("policies", "leave", "expenses", "handbook")}
    await source.close()


async def test_a_429_is_waited_out_then_the_listing_succeeds(site, make):
    source = make()
    site.rate_limit("/wiki/rest/api/content/search", retry_after=7)
    listing = await source.changes(None)
    assert site.ids["leave"] in by_ref(listing)
    assert source._sleep.calls == [7.0], "Retry-After is honoured, on the injected clock"
    await source.close()


async def test_wrong_credentials_give_one_line_naming_the_token_variable(site, make, monkeypatch):
    monkeypatch.setenv(TOKEN_ENV, "not-the-token")
    source = make()
    with pytest.raises(SourceError) as caught:
        await source.changes(None)
    message = str(caught.value)
    assert "\n" not in message and "401" in message and TOKEN_ENV in message
    assert "Unauthorized; scope does not match" in message, "Atlassian's own words (v2 errors body)"
    assert "not-the-token" not in message
    await source.close()


async def test_v1_error_bodies_are_quoted_too(site, make):
    source = make()
    site.script("/wiki/rest/api/content/search", status=401,
                body={"statusCode": 401, "message": "Client must be authenticated to access this resource."})
    with pytest.raises(SourceError) as caught:
        await source.changes(None)
    assert "Client must be authenticated" in str(caught.value) and TOKEN_ENV in str(caught.value)
    await source.close()


async def test_no_permission_and_unknown_space_are_one_line_each(site, make):
    site.forbidden = True
    source = make()
    with pytest.raises(SourceError) as caught:
        await source.changes(None)
    message = str(caught.value)
    assert "403" in message and EMAIL_ENV in message and "HR" in message and "\n" not in message
    await source.close()
    site.forbidden = False
    source = make(space=["HR", "NOPE"])
    with pytest.raises(SourceError) as caught:
        await source.changes(None)
    message = str(caught.value)
    assert "NOPE" in message and "not found" in message and "\n" not in message
    await source.close()


async def test_server_errors_back_off_then_give_one_line(site, make):
    source = make()
    site.script("/wiki/api/v2/spaces", status=500, body={"message": "Internal server error"}, times=5)
    with pytest.raises(SourceError) as caught:
        await source.changes(None)
    assert "500" in str(caught.value) and "\n" not in str(caught.value)
    assert len(source._sleep.calls) == 4
    await source.close()


async def test_a_page_trashed_between_listing_and_reading_is_one_documents_error(site, make):
    source = make()
    leave = by_ref(await source.changes(None))[site.ids["leave"]]
    site.trash_page(site.ids["leave"])
    with pytest.raises(SourceError) as caught:
        await source.read(leave)
    assert "404" in str(caught.value) and "\n" not in str(caught.value)
    await source.close()


async def test_missing_variables_are_named(site, make, monkeypatch):
    monkeypatch.delenv(TOKEN_ENV)
    source = make()
    with pytest.raises(SourceError, match=TOKEN_ENV):
        await source.changes(None)
    assert not site.calls, "nothing is sent without credentials"


def test_config_accepts_one_space_a_bare_site_and_rejects_unknown_keys():
    config = ConfluenceConfig(name="wiki", url="https://acme.atlassian.net/", space="HR, IT")
    assert config.url == "https://acme.atlassian.net/wiki" and config.space == ["HR", "IT"]
    assert config.email_env == "CONFLUENCE_EMAIL" and config.token_env == "CONFLUENCE_TOKEN"
    assert config.attachments is True
    with pytest.raises(ValidationError):
        ConfluenceConfig(name="wiki", url="https://acme.atlassian.net/wiki", space="HR", token="secret")
    with pytest.raises(ValidationError):
        ConfluenceConfig(name="wiki", url="https://acme.atlassian.net/wiki", space="H R")
    with pytest.raises(ValidationError):
        ConfluenceConfig(name="wiki", url="acme.atlassian.net", space="HR")


def test_registers_as_the_confluence_kind_through_the_plugin_entry_point():
    ep = types.SimpleNamespace(name="confluence", value="agent.sources.confluence", load=lambda: confluence)
    registrar = load_plugins([ep])
    assert not registrar.failed
    assert registrar.sources["confluence"] is ConfluenceSource
    assert ConfluenceSource.config_class is ConfluenceConfig
