"""The google_drive source against a local fake of Google's token endpoint and Drive API v3
(tests/fakes/drive_api.py): the service-account JWT grant, the first listing across pages and
sub-folders, exports and downloads as the loaders read them, the changes feed (edits, renames,
removals, trashing, moves), Drive's 403 rate limits, one-line errors, and `audience: from_source`."""

from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from agent.knowledge.loaders import load_bytes
from agent.plugins import Registrar
from agent.sources.base import Listed, Listing, SourceError
from agent.sources.google_drive import XLSX, GoogleDriveConfig, GoogleDriveSource, register
from tests.fakes.drive_api import DOC, FOLDER, SHEET, SLIDES, FakeDrive
from tests.fakes.pdf import make_pdf

SA = "askdesk-reader@askdesk-test.iam.gserviceaccount.com"
ENV = "GOOGLE_DRIVE_CREDENTIALS"
KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)  # throwaway, made per run


def key_json(private_key: rsa.RSAPrivateKey = KEY, email: str = SA) -> str:
    """A service-account JSON key as the Cloud console downloads it."""
    pem = private_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()).decode()
    return json.dumps({"type": "service_account", "project_id": "askdesk-test", "private_key_id": "0123abcd",
                       "private_key": pem, "client_email": email, "client_id": "1000000000000000000001",
                       "token_uri": "https://oauth2.googleapis.com/token"})


@pytest.fixture
async def drive():
    fake = await FakeDrive(page_size=2).start()  # two per page: every listing below spans pages
    fake.add_service_account(SA, KEY.public_key())
    yield fake
    await fake.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


@pytest.fixture
async def open_source(drive, sleeps, monkeypatch):
    """A factory of sources pointed at the fake, with the key in the environment and a sleep
    that records instead of waiting; all closed after the test."""
    monkeypatch.setenv(ENV, key_json())
    opened: list[GoogleDriveSource] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    def make(**config) -> GoogleDriveSource:
        config.setdefault("name", "handbook")
        cfg = GoogleDriveConfig(kind="google_drive", api_url=drive.api_url, token_url=drive.token_url, **config)
        source = GoogleDriveSource(cfg, sleep=sleep)
        opened.append(source)
        return source

    yield make
    for source in opened:
        await source.close()


class Tree:
    """A Handbook folder: Docs, a Sheet, Slides, a PDF, text files, sub-folders, and things that
    must not be listed (a trashed file, an image, a file outside the folder)."""

    def __init__(self, drive: FakeDrive) -> None:
        self.root = drive.folder("Handbook")
        self.leave = drive.add("Leave policy", self.root, DOC, exports={
            "text/markdown": b"# Leave policy\n\nStaff get **25 days** of annual leave.\n",
            "text/html": b"<html><body><h1>Leave policy</h1><p>Staff get 25 days of annual leave.</p></body></html>"})
        self.budget = drive.add("Budget 2025", self.root, SHEET, exports={
            "text/csv": b"Team,Amount\nSupport,1200\nSales,3400\n", XLSX: b"PK\x03\x04fake-xlsx"})
        self.benefits_pdf = make_pdf(["Benefits overview", "Dental plan: 80% covered"])
        self.benefits = drive.add("Benefits.pdf", self.root, "application/pdf", content=self.benefits_pdf)
        drive.add("Old notes.md", self.root, "text/markdown", content=b"# stale", trashed=True)
        drive.add("team-photo.jpg", self.root, "image/jpeg", content=b"\xff\xd8\xff")
        self.townhall = drive.add("Town hall", self.root, SLIDES,
                                  exports={"application/pdf": make_pdf(["Q3 town hall", "Hiring plan"])})
        self.onboarding = drive.folder("Onboarding", self.root)
        self.checklist = drive.add("Checklist", self.onboarding, DOC,
                                   exports={"text/markdown": b"# Checklist\n\n- laptop\n- badge\n"})
        self.week_one = drive.add("Week one.txt", self.onboarding, "text/plain", content=b"Meet your buddy.")
        self.it = drive.folder("IT", self.onboarding)
        self.laptops = drive.add("Laptops.md", self.it, "text/markdown", content=b"# Laptops\n\nMacBook or ThinkPad.")
        self.other = drive.folder("Finance (not shared with askdesk's folder)")
        self.secret = drive.add("Salaries.md", self.other, "text/markdown", content=b"# Salaries")


def by_ref(listing: Listing) -> dict[str, Listed]:
    refs = [d.ref for d in listing.documents]
    assert len(refs) == len(set(refs)), refs
    return {d.ref: d for d in listing.documents}


# --- first listing ------------------------------------------------------------------------------


async def test_first_listing_spans_pages_and_sub_folders(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    listing = await source.changes(None)

    docs = by_ref(listing)
    assert listing.complete is True
    assert set(docs) == {tree.leave, tree.budget, tree.benefits, tree.townhall, tree.checklist, tree.week_one,
                         tree.laptops}  # not the trashed file, the image, folders, or the file outside
    leave = docs[tree.leave]
    assert (leave.title, leave.version) == ("Leave policy", str(drive.items[tree.leave].version))
    assert leave.url == f"https://docs.google.com/document/d/{tree.leave}/edit?usp=drivesdk"
    assert leave.path == "Handbook / Leave policy"
    assert docs[tree.laptops].path == "Handbook / Onboarding / IT / Laptops.md"
    assert docs[tree.benefits].extra["size"] == len(tree.benefits_pdf)
    assert (docs[tree.week_one].title, docs[tree.townhall].title) == ("Week one", "Town hall")  # no suffix
    # pages were followed: the root's 6 children that are not in the trash came 2 at a time
    root_pages = [c for c in drive.calls_to("/drive/v3/files") if c.path == "/drive/v3/files"
                  and c.query["q"] == f"'{tree.root}' in parents and trashed=false"]
    assert [c.query.get("pageToken") for c in root_pages] == [None, "2", "4"]
    # the start token is taken before the walk, and the listing asked for the fields it uses
    paths = [c.path for c in drive.calls if c.path != "/token"]
    assert paths.index("/drive/v3/changes/startPageToken") < paths.index("/drive/v3/files")
    fields = root_pages[0].query["fields"]
    assert "files(id,name,mimeType,modifiedTime,version,webViewLink,parents,md5Checksum" in fields
    assert drive.token_requests == 1  # one token for the whole walk


async def test_an_edit_made_during_the_first_listing_is_in_the_next_feed(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    drive.on_files_list = lambda: drive.edit(tree.laptops, content=b"# Laptops\n\nNow Framework too.")
    first = await source.changes(None)
    second = await source.changes(first.cursor)
    assert tree.laptops in by_ref(second)
    assert by_ref(second)[tree.laptops].version == str(drive.items[tree.laptops].version)


async def test_a_shared_drive_is_listed_with_the_shared_drive_parameters(drive, open_source):
    team = drive.add_drive("People team")
    policy = drive.add("Hybrid work", team, DOC, exports={"text/markdown": b"# Hybrid work\n\nTwo days."})
    sub = drive.folder("Forms", team)
    form = drive.add("Expenses.pdf", sub, "application/pdf", content=make_pdf(["Expenses"]))
    source = open_source(drive_id=team)
    listing = await source.changes(None)
    assert set(by_ref(listing)) == {policy, form}
    assert by_ref(listing)[form].path == "People team / Forms / Expenses.pdf"
    listed = [c for c in drive.calls if c.path == "/drive/v3/files"]
    assert all(c.query["driveId"] == team and c.query["corpora"] == "drive" for c in listed)
    assert drive.calls_to("startPageToken")[0].query["driveId"] == team
    drive.edit(policy, exports={"text/markdown": b"# Hybrid work\n\nThree days."})
    changed = await source.changes(listing.cursor)
    assert [d.ref for d in changed.documents] == [policy]
    assert drive.calls_to("/drive/v3/changes")[-1].query["driveId"] == team
    fetched = await source.read(by_ref(changed)[policy])
    assert b"Three days" in fetched.data


# --- reading ------------------------------------------------------------------------------------


async def test_a_google_doc_is_exported_as_markdown(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    docs = by_ref(await source.changes(None))
    fetched = await source.read(docs[tree.leave])
    assert fetched.filename == "Leave policy.md" and fetched.text is None
    assert fetched.title == "Leave policy" and fetched.url == docs[tree.leave].url
    assert fetched.audience is None  # audience: everyone (the default) never asks for permissions
    assert drive.calls_to("/export")[-1].query == {"mimeType": "text/markdown"}
    assert not drive.calls_to("/permissions")
    assert "**25 days**" in load_bytes(fetched.filename, fetched.data).text


async def test_a_google_doc_falls_back_to_html_where_markdown_export_is_refused(drive, open_source):
    tree = Tree(drive)
    del drive.items[tree.leave].exports["text/markdown"]  # Drive answers 400 "conversion is not supported"
    source = open_source(folder_id=tree.root)
    fetched = await source.read(by_ref(await source.changes(None))[tree.leave])
    assert fetched.filename == "Leave policy.html"
    assert [c.query["mimeType"] for c in drive.calls_to("/export")] == ["text/markdown", "text/html"]
    assert "25 days of annual leave" in load_bytes(fetched.filename, fetched.data).text


async def test_a_sheet_is_exported_as_csv_until_the_loaders_read_xlsx(drive, open_source, monkeypatch):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root, sheets_format="csv")
    docs = by_ref(await source.changes(None))
    fetched = await source.read(docs[tree.budget])
    assert fetched.filename == "Budget 2025.csv"
    table = load_bytes(fetched.filename, fetched.data).text
    assert "| Team | Amount |" in table and "| Sales | 3400 |" in table

    xlsx = open_source(folder_id=tree.root, sheets_format="xlsx", name="handbook-xlsx")
    fetched = await xlsx.read(docs[tree.budget])
    assert (fetched.filename, fetched.data) == ("Budget 2025.xlsx", b"PK\x03\x04fake-xlsx")
    assert drive.calls_to("/export")[-1].query["mimeType"] == XLSX

    auto = open_source(folder_id=tree.root, name="handbook-auto")
    from agent.knowledge import loaders

    expected = ".xlsx" if any(".xlsx" in v for v in vars(loaders).values() if isinstance(v, (set, frozenset))) \
        else ".csv"
    assert (await auto.read(docs[tree.budget])).filename == "Budget 2025" + expected
    monkeypatch.setattr(loaders, "OFFICE_SUFFIXES", {".docx", ".xlsx", ".pptx"}, raising=False)
    assert (await auto.read(docs[tree.budget])).filename == "Budget 2025.xlsx"


async def test_slides_are_exported_as_pdf_one_page_per_slide(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    fetched = await source.read(by_ref(await source.changes(None))[tree.townhall])
    assert fetched.filename == "Town hall.pdf"
    assert drive.calls_to("/export")[-1].query["mimeType"] == "application/pdf"
    text = load_bytes(fetched.filename, fetched.data).text
    assert "Q3 town hall" in text and "Hiring plan" in text


async def test_a_pdf_is_downloaded_with_alt_media(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    fetched = await source.read(by_ref(await source.changes(None))[tree.benefits])
    assert (fetched.filename, fetched.data) == ("Benefits.pdf", tree.benefits_pdf)
    download = drive.calls_to(f"/drive/v3/files/{tree.benefits}")[-1]
    assert download.query["alt"] == "media"
    assert "Dental plan" in load_bytes(fetched.filename, fetched.data).text


async def test_a_listed_without_extra_is_looked_up_first(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    fetched = await source.read(Listed(ref=tree.checklist, version="3"))
    assert (fetched.filename, fetched.title) == ("Checklist.md", "Checklist")
    assert fetched.url == f"https://docs.google.com/document/d/{tree.checklist}/edit?usp=drivesdk"


async def test_a_file_over_max_file_mb_is_refused_by_name_before_downloading(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root, max_file_mb=0.0001)  # 100 bytes
    with pytest.raises(SourceError, match=r"'Benefits.pdf' is .* over the 0.0001 MB limit"):
        await source.read(by_ref(await source.changes(None))[tree.benefits])
    assert not [c for c in drive.calls if c.query.get("alt") == "media"]


# --- the changes feed ---------------------------------------------------------------------------


async def test_changes_edit_rename_removal_and_trash(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    first = await source.changes(None)
    before = by_ref(first)

    drive.edit(tree.leave, exports={"text/markdown": b"# Leave policy\n\nStaff get **30 days**."})
    drive.rename(tree.checklist, "First-day checklist")
    drive.delete(tree.week_one)
    drive.trash(tree.laptops)
    drive.edit(tree.secret, content=b"# Salaries v2")  # outside the folder
    drive.edit(tree.leave, exports={"text/markdown": b"# Leave policy\n\nStaff get **31 days**."})  # twice

    second = await source.changes(first.cursor)
    docs = by_ref(second)
    assert second.complete is False
    assert len(drive.calls_to("/drive/v3/changes")) == 3 + 1  # 6 changes, 2 a page (+ the start token)
    edited = docs[tree.leave]
    assert not edited.deleted and edited.version != before[tree.leave].version
    assert b"31 days" in (await source.read(edited)).data
    renamed = docs[tree.checklist]
    assert (renamed.ref, renamed.title, renamed.deleted) == (tree.checklist, "First-day checklist", False)
    assert renamed.path == "Handbook / Onboarding / First-day checklist"
    assert docs[tree.week_one].deleted and docs[tree.laptops].deleted
    assert docs[tree.secret].deleted  # never in the folder: a deletion the engine has nothing to do for
    assert set(docs) == {tree.leave, tree.checklist, tree.week_one, tree.laptops, tree.secret}

    third = await source.changes(second.cursor)  # nothing since: an empty feed, the cursor moves on
    assert third.documents == [] and third.complete is False
    assert json.loads(third.cursor)["token"] == str(len(drive.log) + 1)


async def test_moves_out_of_and_into_the_folder(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    first = await source.changes(None)

    drive.move(tree.budget, tree.other)  # a file moved out of the tree: a deletion
    drive.move(tree.secret, tree.it)  # a file moved in: a document
    archive = drive.folder("Archive", tree.other)
    kept = drive.add("2019 policy.md", archive, "text/markdown", content=b"# 2019")
    drive.move(archive, tree.onboarding)  # a folder moved in: Drive names the folder, not its files
    second = await source.changes(first.cursor)
    docs = by_ref(second)
    assert docs[tree.budget].deleted
    assert not docs[tree.secret].deleted and docs[tree.secret].path == "Handbook / Onboarding / IT / Salaries.md"
    assert not docs[kept].deleted and docs[kept].path == "Handbook / Onboarding / Archive / 2019 policy.md"

    drive.add("Later.md", archive, "text/markdown", content=b"# later")  # the moved-in folder is followed
    third = await source.changes(second.cursor)
    assert [(d.title, d.path) for d in third.documents] == [("Later", "Handbook / Onboarding / Archive / Later.md")]

    drive.move(tree.onboarding, tree.other)  # a folder moved out: its files are not in the feed
    fourth = await source.changes(third.cursor)
    assert fourth.complete is True  # so the engine gets everything, and deletes the rest
    assert set(by_ref(fourth)) == {tree.leave, tree.benefits, tree.townhall}


async def test_losing_access_to_a_file_is_a_deletion(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    first = await source.changes(None)
    drive.unshare(tree.benefits)
    second = await source.changes(first.cursor)
    assert [(d.ref, d.deleted) for d in second.documents] == [(tree.benefits, True)]


async def test_a_rejected_cursor_lists_everything_again(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    first = await source.changes(None)
    stale = json.dumps({**json.loads(first.cursor), "token": "999999"})
    again = await source.changes(stale)
    assert again.complete is True and len(again.documents) == len(first.documents)
    assert (await source.changes("not a cursor of this source")).complete is True


# --- errors -------------------------------------------------------------------------------------


async def test_drive_403_rate_limits_are_retried_like_429(drive, open_source, sleeps):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    drive.fail("/drive/v3/files", 403, "rateLimitExceeded", "Rate Limit Exceeded", times=1)
    drive.fail("/drive/v3/files", 403, "userRateLimitExceeded", "User Rate Limit Exceeded", times=1)
    drive.fail("/drive/v3/files", 429, "rateLimitExceeded", "Too many requests", retry_after="7")
    listing = await source.changes(None)
    assert len(listing.documents) == 7
    assert len(sleeps) == 3 and 7.0 in sleeps  # the 429's Retry-After is honoured (SourceHTTP)
    assert source.http.waited == pytest.approx(sum(sleeps))


async def test_a_rate_limit_that_never_ends_is_one_line(drive, open_source, sleeps):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    drive.fail("/drive/v3/files", 403, "userRateLimitExceeded", "User Rate Limit Exceeded", times=99)
    with pytest.raises(SourceError) as error:
        await source.changes(None)
    line = str(error.value)
    assert "\n" not in line and "403 userRateLimitExceeded" in line and "still rate-limited after 5 tries" in line
    assert len(sleeps) == 4


async def test_a_bad_key_is_one_line(drive, open_source, monkeypatch):
    tree = Tree(drive)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    monkeypatch.setenv(ENV, key_json(other))  # not the key Google holds for this account
    source = open_source(folder_id=tree.root)
    with pytest.raises(SourceError) as error:
        await source.changes(None)
    line = str(error.value)
    assert "\n" not in line and "PRIVATE KEY" not in line
    assert line == (f"source 'handbook': Google refused the key in {ENV} (invalid_grant: Invalid JWT Signature.): "
                    f"the key may be deleted or disabled, or the clock is wrong; create a new JSON key for {SA}")
    assert not [c for c in drive.calls if c.path.startswith("/drive/")]


@pytest.mark.parametrize("value, expected", [
    ("", f"{ENV} is not set"),
    ("/nonexistent/key.json", "which cannot be read"),
    ("{not json", "neither a JSON key nor the path of one"),
    (json.dumps({"type": "authorized_user", "client_id": "x"}), "is not a service-account key"),
    (json.dumps({"type": "service_account", "client_email": SA, "private_key": "-----BEGIN PRIVATE KEY-----\nxx"}),
     "the private_key in GOOGLE_DRIVE_CREDENTIALS cannot be read"),
])
async def test_an_unusable_key_is_one_line(drive, open_source, monkeypatch, value, expected):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    monkeypatch.setenv(ENV, value)
    with pytest.raises(SourceError, match=expected) as error:
        await source.changes(None)
    assert "\n" not in str(error.value) and drive.token_requests == 0


async def test_the_key_may_be_a_file_path(drive, open_source, monkeypatch, tmp_path):
    tree = Tree(drive)
    path = tmp_path / "askdesk-reader.json"
    path.write_text(key_json())
    monkeypatch.setenv(ENV, str(path))
    assert len((await open_source(folder_id=tree.root).changes(None)).documents) == 7


async def test_an_expired_token_is_renewed_once(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    docs = by_ref(await source.changes(None))
    drive.revoke_tokens()
    assert (await source.read(docs[tree.leave])).filename == "Leave policy.md"
    assert drive.token_requests == 2


async def test_a_folder_not_shared_with_the_account_is_404_in_one_line(drive, open_source):
    tree = Tree(drive)
    drive.items[tree.root].visible = False
    source = open_source(folder_id=tree.root)
    with pytest.raises(SourceError) as error:
        await source.changes(None)
    assert str(error.value) == (f"source 'handbook': opening folder_id {tree.root!r}: Drive answered 404 notFound "
                                f"(not found: check the id, and that it is shared with {SA})")


async def test_a_shared_drive_the_account_is_not_a_member_of_is_404_in_one_line(drive, open_source):
    team = drive.add_drive("People team")
    drive.items[team].visible = False
    with pytest.raises(SourceError) as error:
        await open_source(drive_id=team).changes(None)
    assert str(error.value) == (f"source 'handbook': opening drive_id {team!r}: Drive answered 404 notFound "
                                f"(not found: check the id, and that it is shared with {SA})")


async def test_a_file_id_given_as_folder_id_is_refused(drive, open_source):
    tree = Tree(drive)
    with pytest.raises(SourceError, match="is a file .* not a folder"):
        await open_source(folder_id=tree.leave).changes(None)


async def test_a_403_on_one_document_is_one_line_naming_it(drive, open_source):
    tree = Tree(drive)
    source = open_source(folder_id=tree.root)
    docs = by_ref(await source.changes(None))
    drive.fail("/export", 403, "insufficientFilePermissions",
               "The user does not have sufficient permissions for this file.")
    with pytest.raises(SourceError) as error:
        await source.read(docs[tree.leave])
    assert str(error.value) == (f"source 'handbook': reading 'Leave policy': Drive answered 403 "
                                f"insufficientFilePermissions (access denied: share it with {SA}): The user does "
                                "not have sufficient permissions for this file.")


async def test_a_disabled_drive_api_says_so(drive, open_source):
    tree = Tree(drive)
    drive.fail("startPageToken", 403, "accessNotConfigured",
               "Google Drive API has not been used in project 1000 before or it is disabled.")
    with pytest.raises(SourceError, match="enable the Google Drive API in the service account's Cloud project"):
        await open_source(folder_id=tree.root).changes(None)


async def test_server_errors_are_retried(drive, open_source, sleeps):
    tree = Tree(drive)
    drive.fail("/export", 503, "backendError", "Backend Error", times=2)
    source = open_source(folder_id=tree.root)
    docs = by_ref(await source.changes(None))
    assert (await source.read(docs[tree.checklist])).filename == "Checklist.md"
    assert len(sleeps) == 2


# --- audience: from_source ----------------------------------------------------------------------


PERMISSIONS = [
    {"type": "user", "role": "owner", "emailAddress": "Dana.Owner@Example.org"},
    {"type": "user", "role": "writer", "emailAddress": SA},  # the share that lets askdesk read it
    {"type": "group", "role": "reader", "emailAddress": "hr-team@example.org"},
    {"type": "user", "role": "commenter", "emailAddress": "lee@example.org"},
    {"type": "domain", "role": "reader", "domain": "Example.org"},
    {"type": "user", "role": "reader", "emailAddress": "gone@example.org", "deleted": True},
]


async def test_from_source_audience_is_mapped_from_permissions(drive, open_source):
    tree = Tree(drive)
    drive.share(tree.leave, PERMISSIONS)
    source = open_source(folder_id=tree.root, audience="from_source")
    assert source.reads_audience is True
    first = await source.changes(None)
    docs = by_ref(first)
    fetched = await source.read(docs[tree.leave])
    assert fetched.audience == ["dana.owner@example.org", "domain:example.org", "hr-team@example.org",
                                "lee@example.org"]
    pages = drive.calls_to(f"/files/{tree.leave}/permissions")
    assert [c.query.get("pageToken") for c in pages] == [None, "2", "4"]  # 6 permissions, 2 a page
    assert pages[0].query["fields"] == "nextPageToken,permissions(type,emailAddress,domain,role,deleted)"

    drive.share(tree.leave, [*PERMISSIONS, {"type": "anyone", "role": "reader"}])  # "anyone with the link"
    changed = by_ref(await source.changes(first.cursor))
    # sharing bumps the version, so the engine reads it again
    assert changed[tree.leave].version != docs[tree.leave].version
    assert (await source.read(changed[tree.leave])).audience == ["everyone"]


async def test_from_source_a_change_of_sharing_is_in_the_feed(drive, open_source):
    tree = Tree(drive)
    drive.share(tree.leave, PERMISSIONS[:2])
    source = open_source(folder_id=tree.root, audience="from_source")
    first = await source.changes(None)
    assert (await source.read(by_ref(first)[tree.leave])).audience == ["dana.owner@example.org"]
    drive.share(tree.leave, [PERMISSIONS[1], {"type": "domain", "role": "reader", "domain": "example.org"}])
    second = by_ref(await source.changes(first.cursor))
    assert (await source.read(second[tree.leave])).audience == ["domain:example.org"]


async def test_from_source_without_permission_to_see_sharing_is_refused(drive, open_source):
    tree = Tree(drive)
    drive.items[tree.leave].can_share = False  # shared with the account as Viewer
    source = open_source(folder_id=tree.root, audience="from_source")
    docs = by_ref(await source.changes(None))
    with pytest.raises(SourceError) as error:
        await source.read(docs[tree.leave])
    assert str(error.value).startswith("source 'handbook': cannot read who may see 'Leave policy' "
                                       "(403 insufficientFilePermissions): with audience: from_source, share the "
                                       f"folder with {SA} as Editor")
    assert not drive.calls_to("/export")  # nothing is read without its audience


# --- wiring -------------------------------------------------------------------------------------


def test_register_and_config():
    r = Registrar()
    register(r)
    assert r.sources == {"google_drive": GoogleDriveSource}
    assert GoogleDriveSource.config_class is GoogleDriveConfig
    with pytest.raises(ValueError, match="folder_id .* or drive_id"):
        GoogleDriveConfig(name="d", kind="google_drive")
    with pytest.raises(ValueError):
        GoogleDriveConfig(name="d", kind="google_drive", folder_id="x' or name contains '")
    with pytest.raises(ValueError):
        GoogleDriveConfig(name="d", kind="google_drive", folder_id="abc", token="inline secrets are not keys")
    config = GoogleDriveConfig(name="d", kind="google_drive", folder_id="abc", audience="from_source")
    assert (config.audience, config.credentials_env, config.api_url) == (
        "from_source", "GOOGLE_DRIVE_CREDENTIALS", "https://www.googleapis.com")


def test_the_entry_point_loads_the_kind():
    from importlib.metadata import EntryPoint

    from agent.plugins import GROUP, load_plugins

    loaded = load_plugins([EntryPoint("google_drive", "agent.sources.google_drive", GROUP)])
    assert loaded.failed == [] and loaded.sources == {"google_drive": GoogleDriveSource}
    assert loaded.loaded[0].settings == ("GOOGLE_DRIVE_CREDENTIALS",)


def test_the_fake_answers_only_the_fields_asked_for():
    """So a field the source uses but forgets to ask for (`trashed`, `parents`) fails the tests."""
    from tests.fakes.drive_api import parse_fields, select

    tree = parse_fields("nextPageToken,changes(fileId,removed,file(id,name))")
    assert tree == {"nextPageToken": None,
                    "changes": {"fileId": None, "removed": None, "file": {"id": None, "name": None}}}
    body = {"kind": "drive#changeList", "nextPageToken": "3", "changes": [
        {"fileId": "a", "removed": False, "time": "t", "file": {"id": "a", "name": "A", "mimeType": FOLDER}}]}
    assert select(body, tree) == {"nextPageToken": "3",
                                  "changes": [{"fileId": "a", "removed": False, "file": {"id": "a", "name": "A"}}]}


# --- through the sync engine ----------------------------------------------------------------------


async def test_synced_through_the_engine_with_audiences_from_drive(drive, tmp_path, monkeypatch):
    """sources.yaml -> the engine -> the index: each document searchable only by whom Drive lets
    read it, then a rename and a trash carried by the changes feed."""
    from agent.audience import viewer_keys, viewing
    from agent.config import Settings
    from agent.knowledge.search import search
    from agent.runtime import Runtime
    from agent.sources.config import load_sources
    from agent.sources.sync import sync_all
    from tests.crash_child import EMBEDDER, HashEmbedder

    monkeypatch.setenv(ENV, key_json())
    root = drive.folder("Handbook")
    own = {"type": "user", "role": "writer", "emailAddress": SA}
    leave = drive.add("Leave policy", root, DOC, permissions=[
        own, {"type": "user", "role": "reader", "emailAddress": "Dana@Example.org"}], exports={
        "text/markdown": b"# Leave policy\n\n## Annual leave\n\nStaff get twenty five days of annual leave.\n"})
    money = drive.folder("Money", root)
    mileage = drive.add("Mileage.md", money, "text/markdown", permissions=[
        own, {"type": "domain", "role": "reader", "domain": "example.org"}],
        content=b"# Mileage\n\n## Rates\n\nMileage is repaid at forty cents a mile.\n")
    (tmp_path / "sources.yaml").write_text(
        f"sources:\n  - name: drive\n    kind: google_drive\n    folder_id: {root}\n    api_url: {drive.api_url}\n"
        f"    token_url: {drive.token_url}\n    audience: from_source\n", encoding="utf-8")
    runtime = Runtime.open(Settings(data_dir=tmp_path / "data", sources=tmp_path / "sources.yaml", embedder=EMBEDDER))
    runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]

    async def sync():
        [report] = await sync_all(runtime, sources=load_sources(runtime.settings, {"google_drive": GoogleDriveSource}))
        assert report.error is None and not report.failed, report
        return report

    async def found(query: str, email: str) -> set[str]:
        """The Drive file ids `email` finds (the engine keys documents by source and ref)."""
        with viewing(viewer_keys(email=email)):
            return {p.source.rsplit("/", 1)[-1] for p in await search(runtime, query, top_k=5)}

    try:
        first = await sync()
        assert sorted(first.added) == ["Leave policy", "Mileage"] and first.complete
        assert leave in await found("annual leave days", "dana@example.org")
        assert leave not in await found("annual leave days", "sam@example.org")
        assert mileage in await found("mileage rate", "sam@example.org")  # domain:example.org
        assert await found("mileage rate", "eve@elsewhere.example") == set()

        drive.rename(leave, "Leave and holidays")  # the same ref: changed in place, not added
        drive.trash(mileage)
        second = await sync()
        assert (len(second.changed), second.added, second.removed, second.complete) == (1, [], ["Mileage"], False)
        assert await found("mileage rate", "sam@example.org") == set()
        assert leave in await found("annual leave days", "dana@example.org")
    finally:
        await runtime.close()
