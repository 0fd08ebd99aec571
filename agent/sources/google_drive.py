"""Google Drive as a knowledge source (`kind: google_drive`): one folder and everything under it,
or a whole shared drive, read with the Drive API v3 and kept current with Drive's changes feed.

Plain HTTP through `SourceHTTP` rather than google-api-python-client: that library is synchronous
(httplib2), is not installed, and would need a discovery document served by every test fake.
google-auth (already installed with google-genai) only parses the key and signs the JWT; the
token request itself goes through the same async client, back-off and error lines as the rest.
docs/sources-google-drive.md has the setup, the changes feed and the `from_source` mapping.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig, SourceError
from agent.sources.http import SourceHTTP, retry_after

if TYPE_CHECKING:
    import httpx  # the client is imported when a source first connects: `askdesk ask` loads the plug-ins

log = logging.getLogger("askdesk.sources")

SCOPE = "https://www.googleapis.com/auth/drive.readonly"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
FOLDER = "application/vnd.google-apps.folder"
DOC = "application/vnd.google-apps.document"
SHEET = "application/vnd.google-apps.spreadsheet"
SLIDES = "application/vnd.google-apps.presentation"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
# every field the listing, the changes feed and `read` use (Drive returns only what is asked for)
FILE_FIELDS = "id,name,mimeType,modifiedTime,version,webViewLink,parents,md5Checksum,trashed,size"
CHANGE_FIELDS = f"nextPageToken,newStartPageToken,changes(fileId,removed,file({FILE_FIELDS}))"
PERMISSION_FIELDS = "nextPageToken,permissions(type,emailAddress,domain,role,deleted)"
# Drive sends its per-user and per-project throttling as 403 with these reasons: retried like a 429
RATE_LIMITED = {"rateLimitExceeded", "userRateLimitExceeded"}
# no text in these: never listed, never downloaded
SKIPPED_PREFIXES = ("video/", "audio/", "image/")
EXPORTED = {DOC, SHEET, SLIDES}
_ID = r"^[A-Za-z0-9_-]{1,200}$"

T = TypeVar("T", bound=BaseModel)


class GoogleDriveConfig(SourceConfig):
    """One `kind: google_drive` entry of sources.yaml."""

    kind: Literal["google_drive"] = "google_drive"
    folder_id: str | None = Field(default=None, pattern=_ID)  # a folder: its files, recursively
    drive_id: str | None = Field(default=None, pattern=_ID)  # a shared drive (with folder_id: the folder is in it)
    # the variable holding the service account's JSON key, or the path of the key file
    credentials_env: str = "GOOGLE_DRIVE_CREDENTIALS"
    api_url: str = "https://www.googleapis.com"
    token_url: str = "https://oauth2.googleapis.com/token"
    # Sheets: "xlsx" (one section per sheet, read by the Office loaders), "csv" (first sheet only),
    # "auto": xlsx when the loaders read .xlsx, else csv
    sheets_format: Literal["auto", "xlsx", "csv"] = "auto"
    max_file_mb: float = Field(default=20.0, gt=0)  # larger downloads are refused, by name

    @model_validator(mode="after")
    def _somewhere(self) -> "GoogleDriveConfig":
        if not (self.folder_id or self.drive_id):
            raise ValueError("a google_drive source needs folder_id (a folder) or drive_id (a shared drive)")
        return self


# --- the API's shapes, validated where they come in ------------------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DriveFile(_Model):
    id: str
    name: str = ""
    mimeType: str = ""
    modifiedTime: str = ""
    version: str = ""
    webViewLink: str | None = None
    parents: list[str] = Field(default_factory=list)
    md5Checksum: str | None = None
    trashed: bool = False
    size: int | None = None  # Drive sends int64 as a string; only binary files have one

    @field_validator("version", mode="before")
    @classmethod
    def _text(cls, value: Any) -> Any:
        return "" if value is None else str(value)


class FileList(_Model):
    nextPageToken: str | None = None
    files: list[DriveFile] = Field(default_factory=list)


class Change(_Model):
    fileId: str
    removed: bool = False
    file: DriveFile | None = None


class ChangeList(_Model):
    nextPageToken: str | None = None
    newStartPageToken: str | None = None
    changes: list[Change] = Field(default_factory=list)


class SharedDrive(_Model):
    id: str
    name: str = ""


class StartPageToken(_Model):
    startPageToken: str


class Permission(_Model):
    type: str
    emailAddress: str | None = None
    domain: str | None = None
    role: str = ""
    deleted: bool = False


class PermissionList(_Model):
    nextPageToken: str | None = None
    permissions: list[Permission] = Field(default_factory=list)


class ServiceAccountKey(_Model):
    type: Literal["service_account"]
    client_email: str
    private_key: str
    private_key_id: str | None = None


class TokenAnswer(_Model):
    access_token: str
    expires_in: float = 3600.0


class Cursor(BaseModel):
    """What the engine keeps between runs: Drive's page token, and the folders in scope then
    (id -> [name, parent id]) so that a folder moved in or out is noticed and paths are known
    without asking Drive for every ancestor."""

    v: Literal[1] = 1
    token: str
    folders: dict[str, tuple[str, str | None]]

    def dump(self) -> str:
        return self.model_dump_json()


# --- the source --------------------------------------------------------------------------------


class GoogleDriveSource(Source):
    """A Drive folder (recursively) or shared drive, through a service account."""

    kind: ClassVar[str] = "google_drive"
    config_class: ClassVar[type[SourceConfig]] = GoogleDriveConfig
    reads_audience: ClassVar[bool] = True

    def __init__(self, config: SourceConfig, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not isinstance(config, GoogleDriveConfig):
            config = GoogleDriveConfig.model_validate(config.model_dump())
        super().__init__(config)
        self.drive: GoogleDriveConfig = config
        self._sleep = sleep
        self.http = SourceHTTP(config.name, base_url=config.api_url.rstrip("/"), sleep=sleep, transport=transport)
        self._key: ServiceAccountKey | None = None
        self._signer: Any = None
        self._token: str | None = None
        self._expires = 0.0
        self._token_lock = asyncio.Lock()

    @classmethod
    def env_variables(cls) -> list[str]:
        # the default name; a source naming another in credentials_env reads that instead
        return [str(GoogleDriveConfig.model_fields["credentials_env"].default)]

    @property
    def root(self) -> str:
        return self.drive.folder_id or self.drive.drive_id or ""

    async def close(self) -> None:
        await self.http.close()

    # --- listing ---------------------------------------------------------------------------

    async def changes(self, cursor: str | None) -> Listing:
        """Everything (cursor None), or Drive's changes feed since the cursor's page token."""
        if cursor is None:
            return await self._everything()
        try:
            state = Cursor.model_validate_json(cursor)
        except ValidationError:
            log.warning("source %s: the saved cursor is not one this version reads; listing everything", self.name)
            return await self._everything()
        feed = await self._feed(state.token)
        if feed is None:
            return await self._everything()
        changes, token = feed
        return await self._apply(state, changes, token)

    async def _everything(self) -> Listing:
        # the token is taken first, so an edit made while the tree is walked is in the next feed
        token = _parse(StartPageToken, await self._get("/drive/v3/changes/startPageToken", self._token_params(),
                                                       what="starting the changes feed"), self, "startPageToken")
        root = await self._root_folder()
        folders: dict[str, tuple[str, str | None]] = {self.root: (root.name, None)}
        documents = await self._walk([self.root], folders)
        return Listing(documents=documents, complete=True,
                       cursor=Cursor(token=token.startPageToken, folders=folders).dump())

    async def _root_folder(self) -> DriveFile:
        """The folder (or shared drive) itself. Drive lists the children of a folder nobody shared
        as nothing at all, so this is what tells "not shared" from "empty"."""
        if not self.drive.folder_id:  # a whole shared drive: its id is also its root folder's
            what = f"drive_id {self.root!r}"
            response = await self._get(f"/drive/v3/drives/{self.root}", {"fields": "id,name"}, what=f"opening {what}")
            return DriveFile(id=self.root, mimeType=FOLDER, name=_parse(SharedDrive, response, self, what).name)
        what = f"folder_id {self.root!r}"
        response = await self._get(f"/drive/v3/files/{self.root}",
                                   {"fields": "id,name,mimeType,trashed", "supportsAllDrives": "true"},
                                   what=f"opening {what}")
        folder = _parse(DriveFile, response, self, what)
        if folder.mimeType != FOLDER:
            raise SourceError(f"source {self.name!r}: {what} is a file ({folder.mimeType}), not a folder")
        if folder.trashed:
            raise SourceError(f"source {self.name!r}: {what} ({folder.name!r}) is in the trash: restore it, "
                              "or remove this source")
        return folder

    async def _walk(self, start: list[str], folders: dict[str, tuple[str, str | None]]) -> list[Listed]:
        """The files under `start`, breadth first; sub-folders found are added to `folders`."""
        queue, documents = list(start), []
        while queue:
            folder = queue.pop(0)
            async for item in self._children(folder):
                if item.mimeType == FOLDER:
                    if item.id not in folders:  # a folder reachable twice is walked once
                        folders[item.id] = (item.name, folder)
                        queue.append(item.id)
                elif (listed := self._listed(item, folder, folders)) is not None:
                    documents.append(listed)
        return documents

    async def _children(self, folder: str):  # noqa: ANN202 - an async iterator of DriveFile
        page: str | None = None
        while True:
            params = {"q": f"'{folder}' in parents and trashed=false", "fields": f"nextPageToken,files({FILE_FIELDS})",
                      "pageSize": "1000", **self._list_params()}
            if page:
                params["pageToken"] = page
            listing = _parse(FileList, await self._get("/drive/v3/files", params, what=f"listing folder {folder!r}"),
                             self, "files")
            for item in listing.files:
                yield item
            if not listing.nextPageToken:
                return
            page = listing.nextPageToken

    async def _feed(self, token: str) -> tuple[list[Change], str] | None:
        """Every change since `token` and the token for next time; None when Drive rejects the
        token (Drive says: discard it and start over), so the caller lists everything."""
        changes: list[Change] = []
        page, seen = token, set()
        while True:
            if page in seen:
                raise SourceError(f"source {self.name!r}: Drive's changes feed repeated page token {page!r}")
            seen.add(page)
            response = await self._get("/drive/v3/changes", {"pageToken": page, "fields": CHANGE_FIELDS,
                                                             "pageSize": "1000", "includeRemoved": "true",
                                                             **self._feed_params()},
                                       what="reading the changes feed", ok=(400, 404, 410))
            if response.status_code >= 400:
                reason, message = google_error(response)
                log.warning("source %s: Drive rejected the changes cursor (%s %s: %s); listing everything",
                            self.name, response.status_code, reason, message)
                return None
            feed = _parse(ChangeList, response, self, "changes")
            changes += feed.changes
            if feed.newStartPageToken:
                return changes, feed.newStartPageToken
            if not feed.nextPageToken:
                raise SourceError(f"source {self.name!r}: Drive's changes feed ended without a newStartPageToken")
            page = feed.nextPageToken

    async def _apply(self, state: Cursor, feed: list[Change], token: str) -> Listing:
        """The feed, in scope: edits and renames as documents (same ref), removals, trashing and
        moves out of the folder as deletions. A folder that left the tree sends the engine a full
        listing (the feed names the folder, not the files under it); one that came in is walked."""
        latest: dict[str, Change] = {}
        for change in feed:  # a file changed twice is in the feed twice: the last one counts
            latest.pop(change.fileId, None)
            latest[change.fileId] = change
        before = state.folders
        moved = {ref: change for ref, change in latest.items()
                 if ref in before or (change.file is not None and change.file.mimeType == FOLDER)}
        if self.root in moved and _gone(moved[self.root]):
            return await self._everything()  # says why in one line (not shared any more, trashed)
        after = {ref: place for ref, place in before.items() if ref not in moved or ref == self.root}
        if self.root in moved and (renamed := moved[self.root].file) is not None:
            after[self.root] = (renamed.name, None)
        pending = {ref: change.file for ref, change in moved.items()
                   if ref != self.root and not _gone(change) and change.file is not None}
        progress = True
        while progress:  # a new folder inside another new folder: place parents first
            progress = False
            for ref, item in list(pending.items()):
                parent = next((p for p in item.parents if p in after), None)
                if parent is not None:
                    after[ref] = (item.name, parent)
                    del pending[ref]
                    progress = True
        if any(ref not in after for ref in before):
            log.info("source %s: a folder left %r; listing everything", self.name, self.root)
            return await self._everything()
        entered = [ref for ref in after if ref not in before]
        documents: dict[str, Listed] = {item.ref: item for item in await self._walk(entered, after)}
        for ref, change in latest.items():
            if ref in moved or ref in after:
                continue
            item = change.file
            if _gone(change) or item is None:
                documents[ref] = Listed(ref=ref, version="", deleted=True)
            elif item.mimeType == FOLDER:
                continue  # a folder outside the tree that never was in it
            else:
                parent = next((p for p in item.parents if p in after), None)
                if parent is None:  # moved out of the tree (or never in it: the engine ignores those)
                    documents[ref] = Listed(ref=ref, version="", title=_title(item.name, item.mimeType), deleted=True)
                elif (listed := self._listed(item, parent, after)) is not None:
                    documents[ref] = listed
        return Listing(documents=list(documents.values()), complete=False,
                       cursor=Cursor(token=token, folders=after).dump())

    def _listed(self, item: DriveFile, parent: str, folders: dict[str, tuple[str, str | None]]) -> Listed | None:
        if not _readable(item.mimeType):
            return None
        return Listed(ref=item.id, version=item.version or item.modifiedTime, title=_title(item.name, item.mimeType),
                      url=item.webViewLink,
                      path=" / ".join([*_ancestry(parent, folders), item.name]),
                      extra={"mimeType": item.mimeType, "name": item.name, "size": item.size})

    # --- reading ---------------------------------------------------------------------------

    async def read(self, item: Listed) -> Fetched:
        """Docs as Markdown (HTML where Drive cannot), Sheets as XLSX or CSV, Slides as PDF,
        other files as their bytes; with `audience: from_source`, who may read it."""
        if not item.extra.get("mimeType"):  # a Listed kept from elsewhere: ask Drive what it is
            meta = _parse(DriveFile, await self._get(f"/drive/v3/files/{item.ref}",
                                                     {"fields": FILE_FIELDS, "supportsAllDrives": "true"},
                                                     what=f"opening {item.title or item.ref!r}"), self, "file")
            item = item.model_copy(update={"extra": {"mimeType": meta.mimeType, "name": meta.name, "size": meta.size},
                                           "title": item.title or _title(meta.name, meta.mimeType),
                                           "url": item.url or meta.webViewLink})
        mime = str(item.extra.get("mimeType") or "")
        name = str(item.extra.get("name") or item.title or item.ref)
        what = f"reading {name!r}"
        audience = await self._audience(item.ref, name) if self.drive.audience == "from_source" else None
        if mime == DOC:
            response = await self._export(item.ref, "text/markdown", what, ok=(400,))
            suffix = ".md"
            if response.status_code == 400:  # an account or file Drive cannot export as Markdown
                response, suffix = await self._export(item.ref, "text/html", what), ".html"
        elif mime == SHEET:
            xlsx = self.drive.sheets_format == "xlsx" or (self.drive.sheets_format == "auto" and _loaders_read(".xlsx"))
            response = await self._export(item.ref, XLSX if xlsx else "text/csv", what)
            suffix = ".xlsx" if xlsx else ".csv"
        elif mime == SLIDES:
            response, suffix = await self._export(item.ref, "application/pdf", what), ".pdf"
        elif mime.startswith("application/vnd.google-apps."):
            raise SourceError(f"source {self.name!r}: {name!r} is a {mime} file, which askdesk cannot read")
        else:
            size = item.extra.get("size")
            limit = self.drive.max_file_mb * 1e6
            if isinstance(size, int) and size > limit:
                raise SourceError(f"source {self.name!r}: {name!r} is {size / 1e6:.1f} MB, over the "
                                  f"{self.drive.max_file_mb:g} MB limit (max_file_mb)")
            response = await self._get(f"/drive/v3/files/{item.ref}", {"alt": "media", "supportsAllDrives": "true"},
                                       what=what)
            if len(response.content) > limit:
                raise SourceError(f"source {self.name!r}: {name!r} is over the {self.drive.max_file_mb:g} MB limit "
                                  "(max_file_mb)")
            return Fetched(filename=_filename(name, ""), data=response.content, title=item.title or name,
                           url=item.url, audience=audience)
        return Fetched(filename=_filename(name, suffix), data=response.content, title=item.title or name,
                       url=item.url, audience=audience)

    async def _export(self, ref: str, mime: str, what: str, ok: tuple[int, ...] = ()) -> httpx.Response:
        return await self._get(f"/drive/v3/files/{ref}/export", {"mimeType": mime}, what=what, ok=ok)

    async def _audience(self, ref: str, name: str) -> list[str]:
        """Who Drive lets read the file: user and group emails, `domain:<domain>`, or `everyone`
        for "anyone with the link". The service account's own share is left out. Never guessed:
        a file whose permissions cannot be read is not ingested (SourceError)."""
        audience: set[str] = set()
        page: str | None = None
        own = self._key.client_email.lower() if self._key else ""
        while True:
            params = {"fields": PERMISSION_FIELDS, "pageSize": "100", "supportsAllDrives": "true"}
            if page:
                params["pageToken"] = page
            response = await self._get(f"/drive/v3/files/{ref}/permissions", params,
                                       what=f"reading who may see {name!r}", ok=(403,))
            if response.status_code == 403:
                reason, _ = google_error(response)
                raise SourceError(
                    f"source {self.name!r}: cannot read who may see {name!r} (403 {reason or 'forbidden'}): "
                    f"with audience: from_source, share the folder with {self._who()} as Editor (Drive shows a "
                    "file's sharing only to those who may share it), or use a shared drive")
            listing = _parse(PermissionList, response, self, "permissions")
            for permission in listing.permissions:
                if (entry := audience_entry(permission)) is not None and entry != own:
                    audience.add(entry)
            if not listing.nextPageToken:
                break
            page = listing.nextPageToken
        return ["everyone"] if "everyone" in audience else sorted(audience)

    # --- HTTP and auth ---------------------------------------------------------------------

    def _list_params(self) -> dict[str, str]:
        params = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}
        if self.drive.drive_id:
            params |= {"corpora": "drive", "driveId": self.drive.drive_id}
        return params

    def _feed_params(self) -> dict[str, str]:
        params = {"supportsAllDrives": "true", "includeItemsFromAllDrives": "true"}
        if self.drive.drive_id:
            params["driveId"] = self.drive.drive_id
        return params

    def _token_params(self) -> dict[str, str]:
        params = {"supportsAllDrives": "true"}
        if self.drive.drive_id:
            params["driveId"] = self.drive.drive_id
        return params

    async def _get(self, path: str, params: dict[str, str], *, what: str, ok: tuple[int, ...] = ()) -> httpx.Response:
        """A Drive GET with a bearer token: an expired token is renewed once, 403 rate limits are
        retried like 429s (SourceHTTP already retries 429 and 5xx), other refusals are one line.
        Statuses in `ok` come back to the caller."""
        renewed = False
        attempt = 0
        while True:
            attempt += 1
            token = await self._access_token()
            response = await self.http.request("GET", path, params=params, ok=(400, 401, 403, 404, 410),
                                               headers={"Authorization": f"Bearer {token}"})
            status = response.status_code
            if status < 300:
                return response
            reason, message = google_error(response)
            if status == 401 and not renewed:
                renewed, self._token = True, None
                continue
            if status == 403 and reason in RATE_LIMITED and attempt < self.http.attempts:
                await self._back_off(response, attempt, reason)
                continue
            if status in ok:
                return response
            raise SourceError(self._explain(status, reason, message, what))

    async def _back_off(self, response: httpx.Response, attempt: int, reason: str) -> None:
        wait = retry_after(response, self.http.backoff * 2 ** (attempt - 1) * (1 + random.random() / 4))
        wait = min(wait, self.http.max_wait)
        log.warning("source %s: Drive answered 403 %s, retrying in %.1f s (attempt %d of %d)", self.name, reason,
                    wait, attempt, self.http.attempts)
        self.http.waited += wait
        await self._sleep(wait)

    def _who(self) -> str:
        return self._key.client_email if self._key else "the service account"

    def _explain(self, status: int, reason: str, message: str, what: str) -> str:
        env = self.drive.credentials_env
        if status == 401:
            hint = f"Google refused the access token twice: check that {env} holds a current key"
        elif status == 403 and reason in RATE_LIMITED:
            hint = f"still rate-limited after {self.http.attempts} tries; the next sync tries again"
        elif status == 403 and (reason in ("accessNotConfigured", "SERVICE_DISABLED")
                                or "has not been used in project" in message):
            hint = "enable the Google Drive API in the service account's Cloud project"
        elif status == 403 and reason in ("dailyLimitExceeded", "quotaExceeded"):
            hint = "the Cloud project's Drive quota is used up; the next sync tries again"
        elif status == 403 and reason == "exportSizeLimitExceeded":
            hint = "Drive exports at most 10 MB of a Google Docs, Sheets or Slides file"
        elif status == 403:
            hint = f"access denied: share it with {self._who()}"
        elif status == 404:
            hint = f"not found: check the id, and that it is shared with {self._who()}"
        else:
            hint = ""
        code = f"{status} {reason}".strip()
        detail = f": {message}" if message and status not in (401, 404) else ""
        return f"source {self.name!r}: {what}: Drive answered {code}" + (f" ({hint})" if hint else "") + detail

    def _credentials(self) -> tuple[ServiceAccountKey, Any]:
        """The service account's key and a signer for it, read once from `credentials_env`."""
        if self._signer is not None and self._key is not None:
            return self._key, self._signer
        env = self.drive.credentials_env
        raw = self.secret(env, "credentials").strip()
        if not raw.startswith("{"):
            path = Path(raw).expanduser()
            try:
                raw = path.read_text(encoding="utf-8")
            except OSError as exc:
                raise SourceError(f"source {self.name!r}: {env} names {str(path)!r}, which cannot be read "
                                  f"({exc.strerror or type(exc).__name__}); it must hold the service account's JSON "
                                  "key or its path") from None
        try:
            info = json.loads(raw)
        except ValueError:
            raise SourceError(f"source {self.name!r}: {env} is neither a JSON key nor the path of one "
                              "(download a key of the service account as JSON)") from None
        try:
            key = ServiceAccountKey.model_validate(info)
        except ValidationError:
            raise SourceError(f"source {self.name!r}: {env} is not a service-account key (it needs type "
                              "service_account, client_email and private_key)") from None
        try:
            from google.auth import crypt

            signer = crypt.RSASigner.from_service_account_info(info)
        except Exception as exc:  # noqa: BLE001 - any unreadable key is the same one line
            raise SourceError(f"source {self.name!r}: the private_key in {env} cannot be read "
                              f"({type(exc).__name__}): create a new key for {key.client_email}") from None
        self._key, self._signer = key, signer
        return key, signer

    async def _access_token(self) -> str:
        """A bearer token from the JWT bearer grant, kept until a minute before it expires."""
        async with self._token_lock:
            if self._token and time.time() < self._expires - 60:
                return self._token
            key, signer = self._credentials()
            from google.auth import jwt

            now = int(time.time())
            assertion = jwt.encode(signer, {"iss": key.client_email, "scope": SCOPE, "aud": self.drive.token_url,
                                            "iat": now, "exp": now + 3600}).decode()
            response = await self.http.request("POST", self.drive.token_url, ok=(400, 401, 403),
                                               data={"grant_type": JWT_BEARER, "assertion": assertion})
            if response.status_code >= 400:
                error, description = oauth_error(response)
                raise SourceError(
                    f"source {self.name!r}: Google refused the key in {self.drive.credentials_env} "
                    f"({error}{': ' + description if description else ''}): the key may be deleted or disabled, "
                    f"or the clock is wrong; create a new JSON key for {key.client_email}")
            answer = _parse(TokenAnswer, response, self, "token")
            self._token, self._expires = answer.access_token, time.time() + answer.expires_in
            return self._token


def audience_entry(permission: Permission) -> str | None:
    """One Drive permission as an audience entry: user or group -> its email (lower case),
    domain -> "domain:<domain>", anyone -> "everyone"; deleted accounts and anything else -> None."""
    if permission.deleted:
        return None
    if permission.type in ("user", "group") and permission.emailAddress:
        return permission.emailAddress.strip().lower()
    if permission.type == "domain" and permission.domain:
        return f"domain:{permission.domain.strip().lower()}"
    if permission.type == "anyone":
        return "everyone"
    return None


def google_error(response: httpx.Response) -> tuple[str, str]:
    """(reason, message) of a Google error body `{"error": {"code", "message", "errors": [{"reason"}],
    "status", "details": [{"reason"}]}}`; ("", first line of the body) for anything else."""
    try:
        body = response.json()
    except ValueError:
        return "", _line(response.text)
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return "", ""
    reasons = [e.get("reason") for e in error.get("errors") or [] if isinstance(e, dict)]
    reasons += [d.get("reason") for d in error.get("details") or [] if isinstance(d, dict)]
    reason = next((r for r in reasons if isinstance(r, str) and r), "") or str(error.get("status") or "")
    return reason, _line(str(error.get("message") or ""))


def oauth_error(response: httpx.Response) -> tuple[str, str]:
    """(error, error_description) of an OAuth token endpoint's error body."""
    try:
        body = response.json()
    except ValueError:
        return f"HTTP {response.status_code}", _line(response.text)
    if not isinstance(body, dict):
        return f"HTTP {response.status_code}", ""
    return str(body.get("error") or f"HTTP {response.status_code}"), _line(str(body.get("error_description") or ""))


def register(r: Any) -> None:
    r.source(GoogleDriveSource)


# --- helpers -----------------------------------------------------------------------------------


def _parse(model: type[T], response: httpx.Response, source: Source, what: str) -> T:
    try:
        return model.model_validate(response.json())
    except (ValueError, ValidationError):
        raise SourceError(f"source {source.name!r}: Drive's {what} answer is not what the Drive API v3 "
                          "sends (is api_url right?)") from None


def _gone(change: Change) -> bool:
    return change.removed or change.file is None or change.file.trashed


def _readable(mime: str) -> bool:
    if mime.startswith("application/vnd.google-apps."):
        return mime in EXPORTED
    return not mime.startswith(SKIPPED_PREFIXES)


def _title(name: str, mime: str) -> str:
    """A person's title: a Google file's name as it is, an uploaded file's without its suffix."""
    if mime.startswith("application/vnd.google-apps."):
        return name
    return PurePosixPath(name).stem or name


def _ancestry(folder: str | None, folders: dict[str, tuple[str, str | None]]) -> list[str]:
    names: list[str] = []
    while folder is not None and folder in folders and len(names) < 100:
        name, folder = folders[folder]
        names.append(name)
    return [name for name in reversed(names) if name]


def _filename(name: str, suffix: str) -> str:
    """A file name the loaders can use: no path separators, the export's suffix added."""
    base = re.sub(r"[/\\\x00-\x1f]+", "-", name).strip(" .") or "untitled"
    return base if not suffix or base.lower().endswith(suffix) else base + suffix


def _loaders_read(suffix: str) -> bool:
    """Whether the file loaders read `suffix` (the Office loaders add .xlsx)."""
    from agent.knowledge import loaders

    return any(suffix in value for value in vars(loaders).values()
               if isinstance(value, (set, frozenset)) and all(isinstance(v, str) for v in value))


def _line(text: str) -> str:
    text = text.strip()
    return text.splitlines()[0][:200] if text else ""


__all__ = ["GoogleDriveConfig", "GoogleDriveSource", "audience_entry", "google_error", "oauth_error", "register"]
