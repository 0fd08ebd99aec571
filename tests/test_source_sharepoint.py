"""The `sharepoint` source kind against a local fake of Microsoft Graph and its token endpoint
(tests/fakes/graph_api.py): delta listings across pages, renames and moves keeping the ref,
edits and deletions, 410 resync, throttling, sign-in and permission errors in one line, and a
download redirect that never carries the bearer token."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from agent.plugins import Registrar
from agent.sources.base import Listed, Listing, SourceError
from agent.sources.sharepoint import SharePointConfig, SharePointSource, register
from tests.fakes.graph_api import CLIENT_ID, CLIENT_SECRET, HOST, TENANT, FakeGraphAPI

FILES = {
    "Policies/Leave/parental-leave.md": b"# Parental leave\n\nSixteen weeks, paid.\n",
    "Policies/handbook.pdf": b"%PDF-1.4 fake",
    "Benefits/plan.docx": b"PK\x03\x04 fake docx",
    "notes.txt": b"plain notes",
    "Benefits/photo.png": b"\x89PNG not read",
}


@pytest.fixture(autouse=True)
def credentials(monkeypatch):
    monkeypatch.setenv("SHAREPOINT_TENANT_ID", TENANT)
    monkeypatch.setenv("SHAREPOINT_CLIENT_ID", CLIENT_ID)
    monkeypatch.setenv("SHAREPOINT_CLIENT_SECRET", CLIENT_SECRET)


@pytest.fixture
async def graph():
    fake = await FakeGraphAPI(page_size=2).start()
    ids = {path: fake.add_file(path, data) for path, data in FILES.items()}
    fake.add_folder("Empty folder")
    fake.ids = ids  # type: ignore[attr-defined]
    try:
        yield fake
    finally:
        await fake.stop()


@pytest.fixture
async def source_for(graph):
    made: list[SharePointSource] = []
    sleeps: list[float] = []

    def make(**keys) -> SharePointSource:
        keys.setdefault("site", f"{HOST}:/sites/HR")
        config = SharePointConfig(name="hr", kind="sharepoint", graph_url=graph.url, login_url=graph.url, **keys)

        async def sleep(seconds: float) -> None:
            sleeps.append(seconds)

        source = SharePointSource(config, sleep=sleep, attempts=3)
        source.sleeps = sleeps  # type: ignore[attr-defined]
        made.append(source)
        return source

    yield make
    for source in made:
        await source.close()


def by_ref(listing: Listing) -> dict[str, Listed]:
    return {doc.ref: doc for doc in listing.documents}


def readable(graph: FakeGraphAPI) -> dict[str, str]:
    return {path: ref for path, ref in graph.ids.items() if not path.endswith(".png")}


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text and "\r" not in text, text
    assert text.startswith("source 'hr': "), text
    return text


# --- listing ---------------------------------------------------------------------------------


async def test_first_delta_follows_every_page_and_lists_readable_files(graph, source_for):
    listing = await source_for().changes(None)

    assert listing.complete is True
    assert listing.cursor and listing.cursor.startswith(f"{graph.url}/v1.0/drives/{graph.drive_id}/root/delta?token=")
    docs = by_ref(listing)
    assert set(docs) == set(readable(graph).values())  # no folders, no .png
    leave = docs[graph.ids["Policies/Leave/parental-leave.md"]]
    assert leave.title == "parental-leave"
    assert leave.path == "Documents/Policies/Leave/parental-leave.md"
    assert leave.url == f"https://{HOST}/sites/HR/Shared%20Documents/Policies/Leave/parental-leave.md"
    assert leave.version.startswith('"c:{') and leave.deleted is False
    assert leave.extra["name"] == "parental-leave.md"
    assert docs[graph.ids["notes.txt"]].path == "Documents/notes.txt"
    # root + 3 folders + 5 files + 1 empty folder = 10 items, 2 per page
    delta_calls = graph.calls_to("/root/delta")
    assert len(delta_calls) == math.ceil(10 / 2)
    assert [bool(c.query.get("token")) for c in delta_calls] == [False, True, True, True, True]
    # the token request was the client-credentials flow for Graph
    assert graph.token_requests[0]["grant_type"] == "client_credentials"
    assert graph.token_requests[0]["scope"] == "https://graph.microsoft.com/.default"


async def test_next_sync_with_the_cursor_gets_only_changes(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    second = await source.changes(first.cursor)
    assert second.complete is False and second.documents == []
    assert second.cursor and second.cursor.startswith(f"{graph.url}/v1.0/drives/{graph.drive_id}/root/delta?token=")
    assert graph.calls_to("/root/delta")[-1].query.get("token")  # the call used the saved deltaLink


async def test_a_rename_and_a_move_keep_the_ref_and_change_path_and_title(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    renamed, moved = graph.ids["Policies/handbook.pdf"], graph.ids["notes.txt"]
    graph.rename(renamed, "staff-handbook-2025.pdf")
    graph.move(moved, "Policies/Leave")

    listing = await source.changes(first.cursor)

    assert listing.complete is False
    docs = by_ref(listing)
    assert set(docs) == {renamed, moved}  # the same ids: changes, not new documents
    assert docs[renamed].title == "staff-handbook-2025"
    assert docs[renamed].path == "Documents/Policies/staff-handbook-2025.pdf"
    assert docs[moved].path == "Documents/Policies/Leave/notes.txt"
    assert not any(d.deleted for d in docs.values())
    # a file's own rename or move is not a folder change: no second, complete round
    assert not [c for c in graph.calls_to("/root/delta")[2:] if not c.query.get("token")]


async def test_paths_of_changes_without_their_folders_are_asked_of_graph(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    graph.exclude_parents = True  # the delta names the changed file alone
    ref = graph.ids["notes.txt"]
    graph.move(ref, "Policies/Leave")

    listing = await source.changes(first.cursor)

    assert [(d.ref, d.path) for d in listing.documents] == [(ref, "Documents/Policies/Leave/notes.txt")]
    assert len(graph.calls_to("/items/")) == 1  # the parent, once; its path came with it


async def test_an_edit_changes_the_version_and_nothing_else_is_listed(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    ref = graph.ids["Policies/Leave/parental-leave.md"]
    before = by_ref(first)[ref].version
    graph.edit(ref, b"# Parental leave\n\nTwenty weeks, paid.\n")

    listing = await source.changes(first.cursor)

    assert [d.ref for d in listing.documents] == [ref]
    assert listing.documents[0].version != before
    assert listing.documents[0].path == "Documents/Policies/Leave/parental-leave.md"


async def test_a_delete_arrives_as_deleted(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    ref = graph.ids["Benefits/plan.docx"]
    graph.delete(ref)

    listing = await source.changes(first.cursor)

    assert listing.complete is False
    assert [(d.ref, d.deleted) for d in listing.documents] == [(ref, True)]


async def test_a_folder_rename_lists_everything_so_paths_and_links_follow(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    graph.rename(graph.add_folder("Benefits"), "Perks")  # delta names only the folder

    listing = await source.changes(first.cursor)

    assert listing.complete is True
    docs = by_ref(listing)
    assert set(docs) == set(readable(graph).values())
    assert docs[graph.ids["Benefits/plan.docx"]].path == "Documents/Perks/plan.docx"


async def test_a_deleted_folder_lists_everything_without_its_files(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    graph.delete(graph.add_folder("Policies"))

    listing = await source.changes(first.cursor)

    assert listing.complete is True
    assert set(by_ref(listing)) == {graph.ids["Benefits/plan.docx"], graph.ids["notes.txt"]}


async def test_an_expired_delta_token_relists_completely(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    gone = graph.ids["notes.txt"]
    graph.delete(gone)
    graph.expire_delta_tokens()

    listing = await source.changes(first.cursor)

    assert listing.complete is True  # the engine drops what is not listed: notes.txt
    assert set(by_ref(listing)) == set(readable(graph).values()) - {gone}
    assert not any(d.deleted for d in listing.documents)
    # the new cursor works again
    graph.edit(graph.ids["Benefits/plan.docx"], b"PK\x03\x04 v2")
    again = await source.changes(listing.cursor)
    assert again.complete is False and [d.ref for d in again.documents] == [graph.ids["Benefits/plan.docx"]]


async def test_the_folder_narrows_the_listing_and_a_move_out_is_a_removal(graph, source_for):
    graph.add_file("Policies-old/leave.md", b"not in the folder")
    source = source_for(folder="/Policies/")
    first = await source.changes(None)
    assert set(by_ref(first)) == {graph.ids["Policies/Leave/parental-leave.md"], graph.ids["Policies/handbook.pdf"]}

    handbook = graph.ids["Policies/handbook.pdf"]
    graph.move(handbook, "Benefits")
    graph.edit(graph.ids["notes.txt"], b"changed outside the folder")
    listing = await source.changes(first.cursor)

    docs = by_ref(listing)
    assert docs[handbook].deleted is True
    assert all(d.deleted for d in docs.values())  # nothing outside the folder is ever listed as a document


async def test_a_missing_folder_is_one_line(graph, source_for):
    with pytest.raises(SourceError) as exc:
        await source_for(folder="No such folder").changes(None)
    text = one_line(exc)
    assert "folder 'No such folder'" in text and "404" in text and "itemNotFound" in text


async def test_a_drive_id_and_a_library_by_name(graph, source_for):
    by_id = await source_for(site=None, drive_id=graph.drive_id).changes(None)
    by_library = await source_for(library="documents").changes(None)
    assert set(by_ref(by_id)) == set(by_ref(by_library)) == set(readable(graph).values())

    with pytest.raises(SourceError) as exc:
        await source_for(library="Forms").changes(None)
    assert "no library 'Forms'" in one_line(exc) and "Policies archive" in str(exc.value)


async def test_without_ctag_the_etag_is_the_version(source_for, graph):
    graph.omit_ctag = True  # as OneDrive for Business answers delta
    listing = await source_for().changes(None)
    assert all(d.version.startswith('"{') for d in listing.documents)


async def test_a_cursor_for_another_host_is_not_followed(graph, source_for):
    listing = await source_for().changes("https://graph.example.org/v1.0/drives/x/root/delta?token=abc")
    assert listing.complete is True  # listed from scratch; the token never left for another host
    assert len(listing.documents) == len(readable(graph))


# --- reading ---------------------------------------------------------------------------------


async def test_read_follows_the_download_redirect_without_the_bearer_token(graph, source_for):
    source = source_for()
    listing = await source.changes(None)
    leave = by_ref(listing)[graph.ids["Policies/Leave/parental-leave.md"]]

    fetched = await source.read(leave)

    assert fetched.filename == "parental-leave.md"
    assert fetched.data == FILES["Policies/Leave/parental-leave.md"]
    assert fetched.url == leave.url
    content = graph.calls_to("/content")[-1]
    assert content.headers.get("Authorization", "").startswith("Bearer ")
    # the download URL is on the same origin in the fake, so only the source itself can keep
    # the token off it (httpx would forward it on a same-origin redirect)
    assert len(graph.downloads) == 1
    assert "Authorization" not in graph.downloads[0]


async def test_read_without_extra_asks_graph_for_the_file_name(graph, source_for):
    source = source_for()
    ref = graph.ids["Policies/handbook.pdf"]
    fetched = await source.read(Listed(ref=ref, version="v", title="handbook"))
    assert fetched.filename == "handbook.pdf" and fetched.data == FILES["Policies/handbook.pdf"]


async def test_reading_a_file_deleted_since_the_listing_is_one_line(graph, source_for):
    source = source_for()
    listing = await source.changes(None)
    ref = graph.ids["notes.txt"]
    graph.delete(ref)
    with pytest.raises(SourceError) as exc:
        await source.read(by_ref(listing)[ref])
    text = one_line(exc)
    assert "file 'notes.txt'" in text and "404" in text and "itemNotFound" in text


# --- faults ----------------------------------------------------------------------------------


async def test_429_with_retry_after_then_success(graph, source_for):
    source = source_for()
    graph.fail("delta", 429, "activityLimitReached", "The request has been throttled", retry_after=7)
    listing = await source.changes(None)
    assert listing.complete is True and len(listing.documents) == len(readable(graph))
    assert source.sleeps == [7.0]


async def test_503_then_success_honours_retry_after(graph, source_for):
    source = source_for()
    graph.fail("content", 503, "serviceNotAvailable", "Service unavailable", retry_after=2)
    listing = await source.changes(None)
    fetched = await source.read(by_ref(listing)[graph.ids["notes.txt"]])
    assert fetched.data == b"plain notes" and source.sleeps == [2.0]


async def test_503_that_lasts_is_one_line(graph, source_for):
    source = source_for()
    graph.fail("delta", 503, "serviceNotAvailable", "Service unavailable", retry_after=1, times=10)
    with pytest.raises(SourceError) as exc:
        await source.changes(None)
    assert "503" in one_line(exc)
    assert source.sleeps == [1.0, 1.0]  # 3 attempts


async def test_wrong_client_secret_is_one_line_naming_the_variable(graph, source_for, monkeypatch):
    monkeypatch.setenv("SHAREPOINT_CLIENT_SECRET", "not-the-secret")
    with pytest.raises(SourceError) as exc:
        await source_for().changes(None)
    text = one_line(exc)
    assert "invalid_client" in text and "AADSTS7000215" in text
    assert "check SHAREPOINT_CLIENT_SECRET" in text
    assert "not-the-secret" not in text and "Trace ID" not in text
    assert not graph.calls_to("/v1.0/")  # Graph was never asked without a token


@pytest.mark.parametrize(("variable", "value", "expected"), [
    ("SHAREPOINT_CLIENT_ID", "00000000-0000-0000-0000-000000000000", "AADSTS700016"),
    ("SHAREPOINT_TENANT_ID", "no-such-tenant", "AADSTS90002"),
])
async def test_wrong_client_id_or_tenant_is_one_line(graph, source_for, monkeypatch, variable, value, expected):
    monkeypatch.setenv(variable, value)
    with pytest.raises(SourceError) as exc:
        await source_for().changes(None)
    text = one_line(exc)
    assert expected in text and f"check {variable}" in text


async def test_an_unset_variable_is_named(graph, source_for, monkeypatch):
    monkeypatch.delenv("SHAREPOINT_CLIENT_SECRET")
    with pytest.raises(SourceError) as exc:
        await source_for().changes(None)
    assert "SHAREPOINT_CLIENT_SECRET is not set" in one_line(exc)


async def test_access_denied_is_one_line_naming_the_permission(graph, source_for):
    graph.fail("site", 403, "accessDenied", "Either scp or roles claim need to be present in the token.")
    with pytest.raises(SourceError) as exc:
        await source_for().changes(None)
    text = one_line(exc)
    assert "403" in text and "accessDenied" in text and "Sites.Read.All" in text


async def test_an_unknown_site_is_one_line(graph, source_for):
    with pytest.raises(SourceError) as exc:
        await source_for(site=f"https://{HOST}/sites/Nope").changes(None)
    text = one_line(exc)
    assert f"site '{HOST}:/sites/Nope'" in text and "404" in text and "itemNotFound" in text


async def test_an_expired_access_token_is_renewed_once(graph, source_for):
    source = source_for()
    first = await source.changes(None)
    graph.expire_access_tokens()
    graph.edit(graph.ids["notes.txt"], b"new notes")
    listing = await source.changes(first.cursor)
    assert [d.ref for d in listing.documents] == [graph.ids["notes.txt"]]
    assert len(graph.token_requests) == 2


# --- configuration and registration ------------------------------------------------------------


@pytest.mark.parametrize("site", [
    "acme.sharepoint.com:/sites/HR", "acme.sharepoint.com/sites/HR", "https://acme.sharepoint.com/sites/HR/",
    "acme.sharepoint.com:/sites/HR:",
])
def test_site_forms_are_normalised(site):
    assert SharePointConfig(name="hr", kind="sharepoint", site=site).site == "acme.sharepoint.com:/sites/HR"


@pytest.mark.parametrize("keys", [{}, {"site": "acme.sharepoint.com:/sites/HR", "drive_id": "b!x"},
                                  {"drive_id": "b!x", "library": "Documents"}, {"site": "nohost"}])
def test_bad_configs_are_refused(keys):
    with pytest.raises(ValidationError):
        SharePointConfig(name="hr", kind="sharepoint", **keys)


def test_register_adds_the_kind():
    registrar = Registrar()
    register(registrar)
    assert registrar.sources == {"sharepoint": SharePointSource}
    assert registrar.loaded[0].settings == ("SHAREPOINT_TENANT_ID", "SHAREPOINT_CLIENT_ID", "SHAREPOINT_CLIENT_SECRET")
