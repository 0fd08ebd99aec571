"""A fake of Microsoft Graph's drive API and of the Microsoft identity platform's token endpoint,
enough for the `sharepoint` source (agent/sources/sharepoint.py) to talk to it over HTTP on
127.0.0.1 as it would to graph.microsoft.com and login.microsoftonline.com.

It speaks the real shapes: the client-credentials token endpoint with AADSTS error bodies,
`/v1.0/sites/{host}:/{path}`, `/sites/{id}/drive(s)`, `/drives/{id}`, `/drives/{id}/root:/{path}`,
`/drives/{id}/items/{id}`, and `/drives/{id}/root/delta` with `@odata.nextLink` pages, a final
`@odata.deltaLink`, the ancestors of changed items, no `parentReference.path` in delta answers
and no `name` on deleted items (as OneDrive for Business answers), and `410 Gone` with a
`Location` to restart from once delta tokens are expired. `/content` answers 302 to a
pre-authenticated download URL on this same origin, so a client that forwards its bearer token
there is caught (`downloads` records the headers each download got). Graph errors are
`{"error": {"code", "message"}}`; every Graph call needs a bearer token the fake issued.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import json
import secrets
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from aiohttp import web

from tests.fakes.loopback import serve

TENANT = "11111111-2222-3333-4444-555555555555"
CLIENT_ID = "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
CLIENT_SECRET = "s3cr3t~value"
SCOPE = "https://graph.microsoft.com/.default"
HOST = "contoso.sharepoint.com"
SITE_PATH = "/sites/HR"


@dataclass
class Call:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]


@dataclass
class Fault:
    route: str  # token, site, drive, delta, item, content, download
    status: int
    body: Any
    headers: dict[str, str]
    times: int


@dataclass
class Item:
    id: str
    name: str
    parent: str | None
    folder: bool
    data: bytes = b""
    guid: str = field(default_factory=lambda: str(uuid.uuid4()).upper())
    content_version: int = 1
    meta_version: int = 1
    seq: int = 0
    deleted: bool = False
    order: int = 0


class FakeGraphAPI:
    def __init__(self, *, page_size: int = 200, omit_ctag: bool = False) -> None:
        self.page_size = page_size
        self.omit_ctag = omit_ctag  # OneDrive for Business leaves cTag out of delta answers
        self.exclude_parents = False  # as if every delta were sent `deltaExcludeParent`
        self.drive_id = "b!fAkEdRiVe0hr_documents"
        self.site_id = f"{HOST},6f7a1c2e-0b7d-4a53-9d58-1c7e0a6f2b11,0c4b9e1d-3d7e-4b0a-8d36-5f2b8a9c7e22"
        self.libraries = ["Documents", "Policies archive"]
        self.calls: list[Call] = []
        self.token_requests: list[dict[str, str]] = []
        self.downloads: list[dict[str, str]] = []
        self.faults: list[Fault] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._tokens: set[str] = set()
        self._download_keys: dict[str, str] = {}  # tempauth -> item id
        self._enumerations: dict[str, list[dict[str, Any]]] = {}
        self._seq = 0
        self._order = itertools.count()
        self._generation = 0  # delta tokens of an earlier generation answer 410
        self.items: dict[str, Item] = {}
        self.root_id = self._new_id()
        self.items[self.root_id] = Item(self.root_id, "root", None, True, order=next(self._order))

    # --- lifecycle ------------------------------------------------------------------------------

    async def start(self) -> "FakeGraphAPI":
        app = web.Application()
        app.router.add_post("/{tenant}/oauth2/v2.0/token", self._token)
        app.router.add_get("/v1.0/sites/{rest:.+}", self._sites)
        app.router.add_get("/v1.0/drives/{rest:.+}", self._drives)
        app.router.add_get("/_layouts/15/download.aspx", self._download)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- the drive, changed by tests ------------------------------------------------------------

    def add_folder(self, path: str) -> str:
        parent = self.root_id
        for name in [p for p in path.split("/") if p]:
            child = self._child(parent, name)
            if child is None:
                child = self._create(name, parent, folder=True)
            parent = child.id
        return parent

    def add_file(self, path: str, data: bytes) -> str:
        folder, _, name = path.rpartition("/")
        parent = self.add_folder(folder) if folder else self.root_id
        return self._create(name, parent, folder=False, data=data).id

    def edit(self, item_id: str, data: bytes) -> None:
        item = self.items[item_id]
        item.data, item.content_version, item.meta_version = data, item.content_version + 1, item.meta_version + 1
        self._touch(item)

    def rename(self, item_id: str, name: str) -> None:
        item = self.items[item_id]
        item.name, item.meta_version = name, item.meta_version + 1
        self._touch(item)

    def move(self, item_id: str, folder: str) -> None:
        item = self.items[item_id]
        item.parent = self.add_folder(folder) if folder else self.root_id
        item.meta_version += 1
        self._touch(item)

    def delete(self, item_id: str) -> None:
        item = self.items[item_id]
        for child in [c for c in self.items.values() if c.parent == item_id and not c.deleted]:
            self.delete(child.id)
        item.deleted = True
        self._touch(item)

    def expire_delta_tokens(self) -> None:
        """Every delta token issued so far answers 410 Gone (resyncChangesApplyDifferences)."""
        self._generation += 1

    def expire_access_tokens(self) -> None:
        self._tokens.clear()

    def fail(self, route: str, status: int, code: str = "", message: str = "", *, times: int = 1,
             retry_after: int | None = None, body: Any = None) -> None:
        """The next `times` calls to `route` answer `status` with a Graph error body."""
        headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}
        if body is None:
            body = {"error": {"code": code, "message": message,
                              "innerError": {"date": "2025-01-01T00:00:00", "request-id": str(uuid.uuid4())}}}
        self.faults.append(Fault(route, status, body, headers, times))

    def path_of(self, item_id: str) -> str:
        """Drive-relative path ("Policies/Leave/a.md")."""
        names: list[str] = []
        node = self.items[item_id]
        while node.parent is not None:
            names.append(node.name)
            node = self.items[node.parent]
        return "/".join(reversed(names))

    def calls_to(self, fragment: str) -> list[Call]:
        return [c for c in self.calls if fragment in c.path]

    # --- internals: the model -------------------------------------------------------------------

    def _new_id(self) -> str:
        return "01" + secrets.token_hex(16).upper()[:32]

    def _create(self, name: str, parent: str, *, folder: bool, data: bytes = b"") -> Item:
        item = Item(self._new_id(), name, parent, folder, data=data, order=next(self._order))
        self.items[item.id] = item
        self._touch(item)
        return item

    def _touch(self, item: Item) -> None:
        self._seq += 1
        item.seq = self._seq

    def _child(self, parent: str, name: str) -> Item | None:
        for item in self.items.values():
            if item.parent == parent and not item.deleted and item.name.lower() == name.lower():
                return item
        return None

    def _by_path(self, path: str) -> Item | None:
        node = self.items[self.root_id]
        for name in [p for p in path.split("/") if p]:
            child = self._child(node.id, name)
            if child is None:
                return None
            node = child
        return node

    def _web_url(self, item: Item) -> str:
        base = f"https://{HOST}{SITE_PATH}/Shared%20Documents"
        path = self.path_of(item.id)
        return f"{base}/{quote(path)}" if path else base

    def _json(self, item: Item, *, with_path: bool) -> dict[str, Any]:
        parent_ref: dict[str, Any] = {"driveType": "documentLibrary", "driveId": self.drive_id}
        if item.parent is not None:
            parent_ref["id"] = item.parent
            if with_path:
                folder = self.path_of(item.parent)
                parent_ref["path"] = f"/drives/{self.drive_id}/root:" + (f"/{folder}" if folder else "")
        if item.deleted:
            # OneDrive for Business: a deleted item keeps its id and facet, loses name and cTag,
            # and its parent becomes the root
            parent_ref["id"] = self.root_id
            parent_ref.pop("path", None)
            return {"id": item.id, "parentReference": parent_ref, "deleted": {"state": "deleted"},
                    **({"folder": {"childCount": 0}} if item.folder else {"file": {}})}
        body: dict[str, Any] = {
            "id": item.id,
            "name": item.name,
            "eTag": f'"{{{item.guid}}},{item.meta_version}"',
            "cTag": f'"c:{{{item.guid}}},{item.content_version}"',
            "createdDateTime": "2025-01-01T00:00:00Z",
            "lastModifiedDateTime": f"2025-01-01T00:00:{item.seq % 60:02d}Z",
            "webUrl": self._web_url(item),
            "parentReference": parent_ref,
            "size": len(item.data),
        }
        if item.parent is None:
            body["root"] = {}
        if item.folder:
            body["folder"] = {"childCount": sum(1 for c in self.items.values() if c.parent == item.id
                                                and not c.deleted)}
        else:
            digest = base64.b64encode(hashlib.sha1(item.data).digest()).decode()
            body["file"] = {"mimeType": "application/octet-stream", "hashes": {"quickXorHash": digest}}
        return body

    def _hierarchy(self) -> list[Item]:
        """Live items, parents before children (how a first delta enumerates)."""
        out: list[Item] = []

        def walk(node: Item) -> None:
            out.append(node)
            for child in sorted((c for c in self.items.values() if c.parent == node.id and not c.deleted),
                                key=lambda c: c.order):
                walk(child)

        walk(self.items[self.root_id])
        return out

    def _delta_items(self, since: int | None, exclude_parents: bool) -> list[dict[str, Any]]:
        if since is None:
            return self._in_delta([self._json(item, with_path=False) for item in self._hierarchy()])
        changed = {i.id for i in self.items.values() if i.seq > since}
        wanted = set(changed)
        if not exclude_parents:
            for item_id in changed:
                node = self.items[item_id]
                parent = self.root_id if node.deleted else node.parent
                while parent is not None:
                    wanted.add(parent)
                    parent = self.items[parent].parent
        live = [i for i in self._hierarchy() if i.id in wanted]
        gone = sorted((i for i in self.items.values() if i.deleted and i.id in wanted), key=lambda i: i.seq)
        return self._in_delta([self._json(item, with_path=False) for item in [*live, *gone]])

    def _in_delta(self, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.omit_ctag:
            for entry in entries:
                entry.pop("cTag", None)
        return entries

    def _enumeration(self, items: list[dict[str, Any]]) -> str:
        enum_id = secrets.token_hex(6)
        self._enumerations[enum_id] = items
        return self._token_param({"e": enum_id, "o": 0, "s": self._seq})

    @staticmethod
    def _token_param(state: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(state).encode()).decode().rstrip("=")

    @staticmethod
    def _read_token(value: str) -> dict[str, Any] | None:
        try:
            return json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
        except ValueError:
            return None

    def _delta_url(self, token: str) -> str:
        return f"{self.url}/v1.0/drives/{self.drive_id}/root/delta?token={token}"

    # --- internals: HTTP ------------------------------------------------------------------------

    def _record(self, request: web.Request) -> None:
        self.calls.append(Call(request.method, request.path, dict(request.query), dict(request.headers)))

    def _fault(self, route: str) -> web.Response | None:
        for fault in self.faults:
            if fault.route == route and fault.times > 0:
                fault.times -= 1
                return web.json_response(fault.body, status=fault.status, headers=fault.headers)
        return None

    @staticmethod
    def _error(status: int, code: str, message: str, headers: dict[str, str] | None = None) -> web.Response:
        body = {"error": {"code": code, "message": message,
                          "innerError": {"date": "2025-01-01T00:00:00", "request-id": str(uuid.uuid4())}}}
        return web.json_response(body, status=status, headers=headers)

    def _unauthorised(self, request: web.Request) -> web.Response | None:
        header = request.headers.get("Authorization", "")
        if not header:
            return self._error(401, "InvalidAuthenticationToken", "Access token is empty.")
        scheme, _, token = header.partition(" ")
        if scheme.lower() != "bearer" or token not in self._tokens:
            return self._error(401, "InvalidAuthenticationToken", "Lifetime validation failed, the token is expired.")
        return None

    @staticmethod
    def _aad_error(status: int, error: str, code: int, text: str) -> web.Response:
        trace = str(uuid.uuid4())
        body = {"error": error,
                "error_description": f"AADSTS{code}: {text}\r\nTrace ID: {trace}\r\nCorrelation ID: "
                                     f"{uuid.uuid4()}\r\nTimestamp: 2025-01-01 00:00:00Z",
                "error_codes": [code], "timestamp": "2025-01-01 00:00:00Z", "trace_id": trace,
                "correlation_id": str(uuid.uuid4()),
                "error_uri": f"https://login.microsoftonline.com/error?code={code}"}
        return web.json_response(body, status=status)

    async def _token(self, request: web.Request) -> web.Response:
        self._record(request)
        form = dict(await request.post())
        self.token_requests.append({k: str(v) for k, v in form.items()})
        if (fault := self._fault("token")) is not None:
            return fault
        tenant = request.match_info["tenant"]
        if tenant != TENANT:
            return self._aad_error(400, "invalid_request", 90002,
                                   f"Tenant '{tenant}' not found. Check to make sure you have the correct tenant ID "
                                   "and are signing into the correct cloud.")
        if form.get("grant_type") != "client_credentials":
            return self._aad_error(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.")
        if form.get("client_id") != CLIENT_ID:
            return self._aad_error(400, "unauthorized_client", 700016,
                                   f"Application with identifier '{form.get('client_id')}' was not found in the "
                                   f"directory '{tenant}'.")
        if form.get("client_secret") != CLIENT_SECRET:
            return self._aad_error(401, "invalid_client", 7000215,
                                   "Invalid client secret provided. Ensure the secret being sent in the request is "
                                   "the client secret value, not the client secret ID, for a secret added to app "
                                   f"'{CLIENT_ID}'.")
        if form.get("scope") != SCOPE:
            return self._aad_error(400, "invalid_scope", 1002012, f"The provided value for scope "
                                   f"{form.get('scope')} is not valid.")
        token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9." + secrets.token_urlsafe(24)
        self._tokens.add(token)
        return web.json_response({"token_type": "Bearer", "expires_in": 3599, "ext_expires_in": 3599,
                                  "access_token": token})

    def _site_json(self) -> dict[str, Any]:
        return {"id": self.site_id, "name": SITE_PATH.rsplit("/", 1)[-1], "displayName": "Human Resources",
                "webUrl": f"https://{HOST}{SITE_PATH}", "createdDateTime": "2024-01-01T00:00:00Z"}

    def _drive_json(self, name: str = "Documents") -> dict[str, Any]:
        drive_id = self.drive_id if name == self.libraries[0] else "b!" + hashlib.sha1(name.encode()).hexdigest()[:20]
        return {"id": drive_id, "driveType": "documentLibrary", "name": name,
                "webUrl": f"https://{HOST}{SITE_PATH}/{quote(name)}"}

    async def _sites(self, request: web.Request) -> web.Response:
        self._record(request)
        if (denied := self._unauthorised(request)) is not None:
            return denied
        if (fault := self._fault("site")) is not None:
            return fault
        rest = request.match_info["rest"]
        if rest.startswith(self.site_id):
            tail = rest[len(self.site_id):]
            if tail == "/drive":
                return web.json_response(self._drive_json())
            if tail == "/drives":
                return web.json_response({"value": [self._drive_json(n) for n in self.libraries]})
            return web.json_response(self._site_json()) if not tail else \
                self._error(400, "BadRequest", f"Resource not found for the segment '{tail.strip('/')}'.")
        host, _, path = rest.partition(":")
        if host == HOST and path.rstrip(":").rstrip("/").lower() == SITE_PATH.lower():
            return web.json_response(self._site_json())
        return self._error(404, "itemNotFound", "Requested site could not be found")

    async def _drives(self, request: web.Request) -> web.Response:
        self._record(request)
        if (denied := self._unauthorised(request)) is not None:
            return denied
        rest = request.match_info["rest"]
        drive, _, tail = rest.partition("/")
        if drive != self.drive_id:
            return self._error(404, "itemNotFound", "The resource could not be found.")
        if tail == "":
            return self._fault("drive") or web.json_response(self._drive_json())
        if tail == "root/delta":
            return self._fault("delta") or self._delta(request)
        if tail.startswith("root:"):
            if (fault := self._fault("item")) is not None:
                return fault
            item = self._by_path(tail[len("root:"):].rstrip(":"))
            if item is None:
                return self._error(404, "itemNotFound", "The resource could not be found.")
            return web.json_response(self._json(item, with_path=True))
        if tail.startswith("items/"):
            item_id, _, what = tail[len("items/"):].partition("/")
            item = self.items.get(item_id)
            if what == "content":
                if (fault := self._fault("content")) is not None:
                    return fault
                if item is None or item.deleted or item.folder:
                    return self._error(404, "itemNotFound", "The resource could not be found.")
                key = secrets.token_urlsafe(16)
                self._download_keys[key] = item.id
                return web.Response(status=302, headers={
                    "Location": f"{self.url}/_layouts/15/download.aspx?UniqueId={item.guid}&Translate=false"
                                f"&tempauth={key}&ApiVersion=2.0"})
            if (fault := self._fault("item")) is not None:
                return fault
            if item is None or item.deleted or what:
                return self._error(404, "itemNotFound", "The resource could not be found.")
            return web.json_response(self._json(item, with_path=True))
        return self._error(400, "BadRequest", f"Resource not found for the segment '{tail}'.")

    def _delta(self, request: web.Request) -> web.Response:
        value = request.query.get("token")
        state = self._read_token(value) if value else {}
        if state is None:
            return self._error(400, "invalidRequest", "Provided sync token is malformed.")
        if "e" not in state:  # a new round: from scratch (no token) or since a deltaLink's token
            exclude_parents = self.exclude_parents or "deltaexcludeparent" in {k.lower() for k in request.headers}
            if "s" in state and state.get("g", 0) < self._generation:
                location = self._delta_url(self._enumeration(self._delta_items(None, False)))
                return self._error(410, "resyncChangesApplyDifferences",
                                   "Resync required. Replace any local items with the server's version (including "
                                   "deletes) if you're sure that the service was up to date with your local changes "
                                   "when you last sync'd. Upload any local changes that the server doesn't know about.",
                                   headers={"Location": location})
            state = self._read_token(self._enumeration(self._delta_items(state.get("s"), exclude_parents))) or {}
        items = self._enumerations.get(state["e"])
        if items is None:
            return self._error(400, "invalidRequest", "Provided sync token is malformed.")
        offset = int(state["o"])
        body: dict[str, Any] = {"@odata.context": f"{self.url}/v1.0/$metadata#Collection(driveItem)",
                                "value": items[offset: offset + self.page_size]}
        if offset + self.page_size < len(items):
            body["@odata.nextLink"] = self._delta_url(self._token_param({**state, "o": offset + self.page_size}))
        else:
            body["@odata.deltaLink"] = self._delta_url(self._token_param({"s": state["s"], "g": self._generation}))
        return web.json_response(body)

    async def _download(self, request: web.Request) -> web.Response:
        self._record(request)
        self.downloads.append(dict(request.headers))
        if (fault := self._fault("download")) is not None:
            return fault
        item_id = self._download_keys.get(request.query.get("tempauth", ""))
        if item_id is None:
            return web.Response(status=401, text="Unauthorized: the tempauth token is missing or expired")
        return web.Response(body=self.items[item_id].data, content_type="application/octet-stream")
