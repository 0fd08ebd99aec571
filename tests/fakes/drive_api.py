"""A fake of Google's OAuth token endpoint and the Drive API v3 paths the google_drive source uses,
on 127.0.0.1, speaking the real shapes.

- `POST /token`: the JWT bearer grant. The assertion's RS256 signature is checked against the
  public key registered for its `iss` (with `cryptography`, not google-auth, so the fake does not
  verify google-auth with itself), and `aud`, `scope`, `iat`/`exp`; errors are OAuth bodies
  (`{"error": "invalid_grant", "error_description": "Invalid JWT Signature."}`).
- Drive paths check the bearer token (401 `authError` otherwise), honour `fields` (partial
  responses: only what was asked for comes back), page with `pageToken`/`nextPageToken`, and
  answer errors as Google does: `{"error": {"code", "message", "errors": [{"domain", "reason",
  "message"}]}}`.
- Every mutation (`edit`, `rename`, `move`, `trash`, `delete`, `share`, `unshare`) bumps the
  file's `version` and appends to the changes log, which `changes.list` pages through from a
  numeric page token (like Drive's) to `newStartPageToken`. Items of a shared drive are only
  listed, fetched or in the feed with `supportsAllDrives`/`includeItemsFromAllDrives`, as on Drive.
- `fail(path_part, status, reason)` scripts errors (e.g. 403 `rateLimitExceeded` twice);
  `calls` records every request.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from tests.fakes.loopback import serve
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

FOLDER = "application/vnd.google-apps.folder"
DOC = "application/vnd.google-apps.document"
SHEET = "application/vnd.google-apps.spreadsheet"
SLIDES = "application/vnd.google-apps.presentation"
SCOPES = {"https://www.googleapis.com/auth/drive.readonly", "https://www.googleapis.com/auth/drive"}
DEFAULT_FILE_FIELDS = "kind,id,name,mimeType"


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    at: float = field(default_factory=time.monotonic)


@dataclass
class Item:
    id: str
    name: str
    mimeType: str
    parents: list[str]
    content: bytes = b""
    exports: dict[str, bytes] = field(default_factory=dict)
    trashed: bool = False
    version: int = 1
    modified: int = 0
    permissions: list[dict[str, Any]] = field(default_factory=list)
    can_share: bool = True  # Drive lists a file's permissions only to those who may share it
    visible: bool = True  # False: the service account lost access
    drive_id: str | None = None


@dataclass
class Failure:
    path_part: str
    status: int
    reason: str
    message: str
    times: int
    retry_after: str | None


def google_error(status: int, reason: str, message: str, **extra: Any) -> web.Response:
    """Drive's error body."""
    error = {"domain": "usageLimits" if "Limit" in reason else "global", "reason": reason, "message": message, **extra}
    return web.json_response({"error": {"code": status, "message": message, "errors": [error]}}, status=status)


def parse_fields(spec: str) -> dict[str, Any]:
    """Drive's `fields` syntax ("nextPageToken,files(id,name)") as a tree: name -> subtree or None."""
    pos = 0

    def group() -> dict[str, Any]:
        nonlocal pos
        out: dict[str, Any] = {}
        name = ""
        while pos < len(spec):
            ch = spec[pos]
            pos += 1
            if ch == ",":
                if name.strip():
                    out[name.strip()] = None
                name = ""
            elif ch == "(":
                out[name.strip()] = group()
                name = ""
            elif ch == ")":
                break
            else:
                name += ch
        if name.strip():
            out[name.strip()] = None
        return out

    return group()


def select(value: Any, tree: dict[str, Any] | None) -> Any:
    if tree is None or "*" in tree:
        return value
    if isinstance(value, list):
        return [select(v, tree) for v in value]
    if isinstance(value, dict):
        return {k: select(value[k], sub) for k, sub in tree.items() if k in value}
    return value


def _b64url(data: str) -> bytes:
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


class FakeDrive:
    def __init__(self, *, page_size: int = 100) -> None:
        self.page_size = page_size
        self.items: dict[str, Item] = {}
        self.drives: set[str] = set()
        self.log: list[str] = []  # change n (1-based) is log[n - 1]; page token n reads from change n
        self.deleted: set[str] = set()
        self.keys: dict[str, rsa.RSAPublicKey] = {}
        self.tokens: set[str] = set()
        self.token_requests = 0
        self.calls: list[Call] = []
        self.failures: list[Failure] = []
        self.on_files_list: Callable[[], None] | None = None  # runs once, at the next files.list
        self._ids = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> "FakeDrive":
        app = web.Application()
        app.router.add_post("/token", self._token)
        app.router.add_get("/drive/v3/changes/startPageToken", self._start_page_token)
        app.router.add_get("/drive/v3/changes", self._changes)
        app.router.add_get("/drive/v3/files", self._files_list)
        app.router.add_get("/drive/v3/files/{id}", self._files_get)
        app.router.add_get("/drive/v3/files/{id}/export", self._export)
        app.router.add_get("/drive/v3/files/{id}/permissions", self._permissions)
        app.router.add_get("/drive/v3/drives/{id}", self._drives_get)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def token_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/token"

    # --- fixtures -----------------------------------------------------------------------------

    def add_service_account(self, email: str, public_key: rsa.RSAPublicKey) -> None:
        self.keys[email] = public_key

    def revoke_tokens(self) -> None:
        """Every access token handed out so far expires (the next Drive call gets a 401)."""
        self.tokens.clear()

    def add_drive(self, name: str) -> str:
        """A shared drive; its id is also its root folder's id, as on Drive."""
        drive_id = f"0AFakeDrive{next(self._ids):04d}"
        self.drives.add(drive_id)
        self.items[drive_id] = Item(drive_id, name, FOLDER, [], drive_id=drive_id)
        return drive_id

    def add(self, name: str, parent: str | None, mime: str, *, content: bytes = b"",
            exports: dict[str, bytes] | None = None, permissions: list[dict[str, Any]] | None = None,
            can_share: bool = True, trashed: bool = False) -> str:
        ref = f"1Fake{next(self._ids):04d}x"
        drive_id = self.items[parent].drive_id if parent and parent in self.items else None
        self.items[ref] = Item(ref, name, mime, [parent] if parent else [], content=content, exports=exports or {},
                               permissions=[dict(p, id=f"perm{i}") for i, p in enumerate(permissions or [])],
                               can_share=can_share, trashed=trashed, drive_id=drive_id)
        self._changed(ref)
        return ref

    def folder(self, name: str, parent: str | None = None) -> str:
        return self.add(name, parent, FOLDER)

    def _changed(self, ref: str) -> None:
        item = self.items.get(ref)
        if item is not None:
            item.version += 1
            item.modified = len(self.log) + 1
        self.log.append(ref)

    def edit(self, ref: str, *, content: bytes | None = None, exports: dict[str, bytes] | None = None) -> None:
        item = self.items[ref]
        if content is not None:
            item.content = content
        if exports is not None:
            item.exports = exports
        self._changed(ref)

    def rename(self, ref: str, name: str) -> None:
        self.items[ref].name = name
        self._changed(ref)

    def move(self, ref: str, parent: str) -> None:
        self.items[ref].parents = [parent]
        self._changed(ref)

    def trash(self, ref: str) -> None:
        self.items[ref].trashed = True
        self._changed(ref)

    def delete(self, ref: str) -> None:
        """Deleted for good: the feed reports `removed: true` with no file."""
        del self.items[ref]
        self.deleted.add(ref)
        self._changed(ref)

    def unshare(self, ref: str) -> None:
        """The service account loses access: `removed: true` in its feed, 404 everywhere."""
        self.items[ref].visible = False
        self._changed(ref)

    def share(self, ref: str, permissions: list[dict[str, Any]]) -> None:
        self.items[ref].permissions = [dict(p, id=f"perm{i}") for i, p in enumerate(permissions)]
        self._changed(ref)

    def fail(self, path_part: str, status: int, reason: str, message: str = "", *, times: int = 1,
             retry_after: str | None = None) -> None:
        """The next `times` requests whose path contains `path_part` get this Google error."""
        self.failures.append(Failure(path_part, status, reason, message or reason, times, retry_after))

    def calls_to(self, path_part: str) -> list[Call]:
        return [c for c in self.calls if path_part in c.path]

    # --- helpers ------------------------------------------------------------------------------

    def _resource(self, item: Item) -> dict[str, Any]:
        link = {DOC: f"https://docs.google.com/document/d/{item.id}/edit?usp=drivesdk",
                SHEET: f"https://docs.google.com/spreadsheets/d/{item.id}/edit?usp=drivesdk",
                SLIDES: f"https://docs.google.com/presentation/d/{item.id}/edit?usp=drivesdk",
                FOLDER: f"https://drive.google.com/drive/folders/{item.id}"}.get(
                    item.mimeType, f"https://drive.google.com/file/d/{item.id}/view?usp=drivesdk")
        resource: dict[str, Any] = {
            "kind": "drive#file", "id": item.id, "name": item.name, "mimeType": item.mimeType,
            "parents": list(item.parents), "trashed": item.trashed, "version": str(item.version),
            "modifiedTime": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(1_735_689_600 + item.modified * 60)),
            "webViewLink": link,
        }
        if item.drive_id:
            resource["driveId"] = item.drive_id
        if not item.mimeType.startswith("application/vnd.google-apps."):
            resource["md5Checksum"] = hashlib.md5(item.content).hexdigest()
            resource["size"] = str(len(item.content))
        return resource

    def _reachable(self, item: Item, query: dict[str, str]) -> bool:
        if not item.visible:
            return False
        if item.drive_id and query.get("supportsAllDrives") != "true":
            return False  # Drive answers 404 for shared-drive items without supportsAllDrives
        return True

    async def _enter(self, request: web.Request) -> web.Response | None:
        """Record the call; the bearer check, then any scripted failure."""
        query = dict(request.query)
        self.calls.append(Call(request.method, request.path, query))
        auth = request.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.tokens:
            message = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login "
                       "cookie or other valid authentication credential.")
            body = {"error": {"code": 401, "message": message, "status": "UNAUTHENTICATED",
                              "errors": [{"message": "Invalid Credentials", "domain": "global", "reason": "authError",
                                          "location": "Authorization", "locationType": "header"}]}}
            return web.json_response(body, status=401)
        for failure in self.failures:
            if failure.times > 0 and failure.path_part in request.path:
                failure.times -= 1
                response = google_error(failure.status, failure.reason, failure.message)
                if failure.retry_after is not None:
                    response.headers["Retry-After"] = failure.retry_after
                return response
        return None

    def _not_found(self, ref: str) -> web.Response:
        return google_error(404, "notFound", f"File not found: {ref}.", locationType="parameter", location="fileId")

    def _fields(self, query: dict[str, str], default: str) -> dict[str, Any]:
        return parse_fields(query.get("fields") or default)

    # --- OAuth --------------------------------------------------------------------------------

    async def _token(self, request: web.Request) -> web.Response:
        form = await request.post()
        self.calls.append(Call("POST", request.path, {k: str(v) for k, v in form.items()}))
        self.token_requests += 1
        for failure in self.failures:
            if failure.times > 0 and failure.path_part in request.path:
                failure.times -= 1
                return web.json_response({"error": failure.reason, "error_description": failure.message},
                                         status=failure.status)

        def refuse(error: str, description: str) -> web.Response:
            return web.json_response({"error": error, "error_description": description}, status=400)

        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            return refuse("unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type')}")
        assertion = str(form.get("assertion") or "")
        try:
            head_b64, claims_b64, signature_b64 = assertion.split(".")
            header, claims = json.loads(_b64url(head_b64)), json.loads(_b64url(claims_b64))
        except ValueError:
            return refuse("invalid_request", "Invalid JWT.")
        key = self.keys.get(claims.get("iss", ""))
        if key is None:
            return refuse("invalid_grant", "Invalid grant: account not found")
        if header.get("alg") != "RS256":
            return refuse("invalid_grant", "Invalid JWT Signature.")
        try:
            key.verify(_b64url(signature_b64), f"{head_b64}.{claims_b64}".encode(), padding.PKCS1v15(),
                       hashes.SHA256())
        except InvalidSignature:
            return refuse("invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") != self.token_url:
            return refuse("invalid_grant", "Invalid JWT: audience")
        now = time.time()
        if not (claims.get("iat", 0) - 300 <= now <= claims.get("exp", 0)) or claims["exp"] - claims["iat"] > 3600:
            return refuse("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a "
                                           "reasonable timeframe. Check your iat and exp values in the JWT claim.")
        if not set(str(claims.get("scope", "")).split()) & SCOPES:
            return refuse("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        token = f"ya29.fake-{self.token_requests}"
        self.tokens.add(token)
        return web.json_response({"access_token": token, "expires_in": 3599, "token_type": "Bearer"})

    # --- Drive v3 -----------------------------------------------------------------------------

    async def _start_page_token(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        drive_id = request.query.get("driveId")
        if drive_id and drive_id not in self.drives:
            return google_error(404, "notFound", f"Shared drive not found: {drive_id}")
        return web.json_response({"kind": "drive#startPageToken", "startPageToken": str(len(self.log) + 1)})

    async def _drives_get(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        drive_id = request.match_info["id"]
        if drive_id not in self.drives or not self.items[drive_id].visible:
            return google_error(404, "notFound", f"Shared drive not found: {drive_id}", locationType="parameter",
                                location="driveId")
        body = {"kind": "drive#drive", "id": drive_id, "name": self.items[drive_id].name}
        return web.json_response(select(body, self._fields(dict(request.query), "kind,id,name")))

    async def _changes(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        query = dict(request.query)
        token = query.get("pageToken", "")
        if not token.isdigit() or not 1 <= int(token) <= len(self.log) + 1:
            return google_error(400, "invalid", "Invalid Value", locationType="parameter", location="pageToken")
        drive_id = query.get("driveId")
        if drive_id and query.get("supportsAllDrives") != "true":
            return google_error(400, "badRequest", "The driveId parameter requires supportsAllDrives.")
        all_drives = query.get("includeItemsFromAllDrives") == "true"
        start = int(token) - 1
        window = self.log[start:start + self.page_size]
        changes = []
        for n, ref in enumerate(window, start=start + 1):
            item = self.items.get(ref)
            item_drive = item.drive_id if item else None
            if drive_id and item is not None and item_drive != drive_id:
                continue
            if not drive_id and item_drive and not all_drives:
                continue
            change: dict[str, Any] = {"kind": "drive#change", "changeType": "file", "fileId": ref,
                                      "time": f"2025-01-01T00:00:{n % 60:02d}.000Z"}
            if item is None or not item.visible:
                change["removed"] = True
            else:
                change["removed"] = False
                change["file"] = self._resource(item)
            changes.append(change)
        body: dict[str, Any] = {"kind": "drive#changeList", "changes": changes}
        if start + self.page_size < len(self.log):
            body["nextPageToken"] = str(start + self.page_size + 1)
        else:
            body["newStartPageToken"] = str(len(self.log) + 1)
        return web.json_response(select(body, self._fields(query, "kind,nextPageToken,newStartPageToken,changes")))

    async def _files_list(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        if self.on_files_list is not None:
            hook, self.on_files_list = self.on_files_list, None
            hook()
        query = dict(request.query)
        match = re.fullmatch(r"'([^'\\]+)' in parents(?: and trashed ?= ?(true|false))?", query.get("q", ""))
        if not match:
            return google_error(400, "invalid", "Invalid Value", locationType="parameter", location="q")
        parent, trashed = match.group(1), match.group(2)
        drive_id = query.get("driveId")
        if drive_id and not (query.get("corpora") == "drive" and query.get("includeItemsFromAllDrives") == "true"
                             and query.get("supportsAllDrives") == "true"):
            return google_error(403, "teamDriveIdRequiresTeamDriveSupport",
                                "The driveId parameter requires corpora=drive, includeItemsFromAllDrives and "
                                "supportsAllDrives.")
        all_drives = query.get("includeItemsFromAllDrives") == "true" and query.get("supportsAllDrives") == "true"
        matches = [item for item in self.items.values()
                   if parent in item.parents and item.visible
                   and (trashed is None or item.trashed == (trashed == "true"))
                   and (not item.drive_id or all_drives)
                   and (not drive_id or item.drive_id == drive_id)]
        offset = int(query.get("pageToken") or 0)
        page_size = min(int(query.get("pageSize") or 100), self.page_size)
        page = matches[offset:offset + page_size]
        body: dict[str, Any] = {"kind": "drive#fileList", "incompleteSearch": False,
                                "files": [self._resource(item) for item in page]}
        if offset + page_size < len(matches):
            body["nextPageToken"] = str(offset + page_size)
        return web.json_response(select(body, self._fields(query, f"kind,nextPageToken,files({DEFAULT_FILE_FIELDS})")))

    async def _files_get(self, request: web.Request) -> web.StreamResponse:
        if (refused := await self._enter(request)) is not None:
            return refused
        ref, query = request.match_info["id"], dict(request.query)
        item = self.items.get(ref)
        if item is None or not self._reachable(item, query):
            return self._not_found(ref)
        if query.get("alt") == "media":
            if item.mimeType.startswith("application/vnd.google-apps."):
                return google_error(403, "fileNotDownloadable", "Only files with binary content can be downloaded. "
                                                                "Use Export with Docs Editors files.")
            return web.Response(body=item.content, content_type=item.mimeType)
        return web.json_response(select(self._resource(item), self._fields(query, DEFAULT_FILE_FIELDS)))

    async def _export(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        ref, query = request.match_info["id"], dict(request.query)
        item = self.items.get(ref)
        if item is None or not self._reachable(item, {"supportsAllDrives": "true"}):
            return self._not_found(ref)
        if not item.mimeType.startswith("application/vnd.google-apps."):
            return google_error(403, "fileNotExportable", "Export only supports Docs Editors files.")
        mime = query.get("mimeType", "")
        if mime not in item.exports:
            return google_error(400, "badRequest", "The requested conversion is not supported.",
                                locationType="parameter", location="convertTo")
        return web.Response(body=item.exports[mime], content_type=mime.split(";")[0])

    async def _permissions(self, request: web.Request) -> web.Response:
        if (refused := await self._enter(request)) is not None:
            return refused
        ref, query = request.match_info["id"], dict(request.query)
        item = self.items.get(ref)
        if item is None or not self._reachable(item, query):
            return self._not_found(ref)
        if not item.can_share:
            return google_error(403, "insufficientFilePermissions",
                                "The user does not have sufficient permissions for this file.")
        offset = int(query.get("pageToken") or 0)
        page_size = min(int(query.get("pageSize") or 100), self.page_size)
        page = item.permissions[offset:offset + page_size]
        body: dict[str, Any] = {"kind": "drive#permissionList",
                                "permissions": [dict(p, kind="drive#permission") for p in page]}
        if offset + page_size < len(item.permissions):
            body["nextPageToken"] = str(offset + page_size)
        return web.json_response(select(body, self._fields(query, "kind,nextPageToken,permissions(id,type,kind,role)")))
