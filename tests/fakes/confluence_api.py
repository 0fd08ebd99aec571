"""A fake Confluence Cloud site, speaking the REST API the `confluence` source calls.

Paths, parameters and bodies follow Atlassian's documentation of Confluence Cloud:

- `GET /wiki/api/v2/spaces?keys=A,B` (v2: `{"results": [...], "_links": {"base": …}}`)
- `GET /wiki/rest/api/content/search?cql=…&expand=…&limit=…` (v1 CQL search: `{"results",
  "start", "limit", "size", "_links": {"base", "context", "next", "self"}}`; `limit` is capped like
  the real one and `_links.next` carries an opaque `cursor`, relative to the /wiki context).
  Only the CQL the source writes is understood; anything else is a 400 as Confluence's parser
  gives. `lastmodified` is compared in the account's time zone, as on a real site.
- `GET /wiki/api/v2/pages/{id}?body-format=…` (v2 page with `body.<format>.value`)
- `GET /wiki/api/v2/attachments/{id}` (v2 attachment with `downloadLink`)
- `GET /wiki/download/attachments/{page}/{file}` → 302 to a media URL on another origin
  (localhost) carrying its own token, as Cloud redirects downloads to api.media.atlassian.com.

Every API call needs Basic auth (email:API token); errors have Atlassian's bodies: v1
`{"statusCode": 401, "message": …}`, v2 `{"errors": [{"status": 401, "code": "UNAUTHORIZED", …}]}`.
`script()` answers the next calls under a path with a given status (429 with Retry-After, 500).
Trashing a page takes it and its attachments out of search, as Confluence's trash does.
"""

from __future__ import annotations

import base64
import itertools
import re
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any
from urllib.parse import quote, urlencode

from aiohttp import web

from tests.fakes.loopback import serve

UTC = timezone.utc


@dataclass
class FakePage:
    id: str
    space: str
    title: str
    body: str  # storage format (XHTML)
    parent: str | None
    when: datetime
    version: int = 1
    labels: tuple[str, ...] = ()
    status: str = "current"


@dataclass
class FakeAttachment:
    id: str
    page: str
    title: str
    data: bytes
    media_type: str
    when: datetime
    version: int = 1
    status: str = "current"


@dataclass
class Call:
    path: str
    query: dict[str, str]
    auth: str | None = None


@dataclass
class _Script:
    prefix: str
    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class FakeConfluence:
    def __init__(self, *, email: str = "bot@acme.test", token: str = "api-token-1", max_limit: int = 3,
                 user_utc_offset_hours: float = -10) -> None:
        self.email, self.token = email, token
        self.max_limit = max_limit  # the site's cap on `limit` (real sites cap too; small here to page)
        self.user_tz = timezone(timedelta(hours=user_utc_offset_hours))  # CQL dates are in the user's zone
        self.spaces: dict[str, dict[str, Any]] = {}
        self.pages: dict[str, FakePage] = {}
        self.attachments: dict[str, FakeAttachment] = {}
        self.calls: list[Call] = []
        self.forbidden = False  # True: the account may not use Confluence (403 everywhere)
        self.now = datetime(2024, 1, 10, 9, 0, tzinfo=UTC)
        self._scripts: list[_Script] = []
        self._ids = itertools.count(65601)
        self._cursors: dict[str, int] = {}
        self._media: dict[str, str] = {}  # media token -> attachment id
        self._runner: web.AppRunner | None = None
        self.port = 0

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> "FakeConfluence":
        app = web.Application(middlewares=[self._middleware])
        app.router.add_get("/wiki/api/v2/spaces", self._spaces)
        app.router.add_get("/wiki/api/v2/pages/{id}", self._page)
        app.router.add_get("/wiki/api/v2/attachments/{id}", self._attachment)
        app.router.add_get("/wiki/rest/api/content/search", self._search)
        app.router.add_get("/wiki/download/attachments/{page}/{name}", self._download)
        app.router.add_get("/media/file/{token}/binary", self._media_binary)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        """What a user writes as `url:` (https://SITE.atlassian.net/wiki)."""
        return self.origin + "/wiki"

    # --- content --------------------------------------------------------------------------------

    def tick(self, **delta: float) -> datetime:
        self.now += timedelta(**delta) if delta else timedelta(minutes=1)
        return self.now

    def add_space(self, key: str, name: str) -> str:
        space_id = str(next(self._ids))
        self.spaces[key] = {"id": space_id, "key": key, "name": name}
        return space_id

    def add_page(self, space: str, title: str, body: str, *, parent: str | None = None,
                 labels: tuple[str, ...] = ()) -> str:
        page_id = str(next(self._ids))
        self.pages[page_id] = FakePage(page_id, space, title, body, parent, self.tick(), labels=labels)
        return page_id

    def edit_page(self, page_id: str, *, body: str | None = None, title: str | None = None) -> None:
        page = self.pages[page_id]
        page.body = page.body if body is None else body
        page.title = page.title if title is None else title
        page.version += 1
        page.when = self.tick()

    def trash_page(self, page_id: str) -> None:
        self.pages[page_id].status = "trashed"
        self.pages[page_id].when = self.tick()
        for att in self.attachments.values():
            if att.page == page_id:
                att.status = "trashed"

    def add_attachment(self, page_id: str, title: str, data: bytes, media_type: str) -> str:
        att_id = f"att{next(self._ids)}"
        self.attachments[att_id] = FakeAttachment(att_id, page_id, title, data, media_type, self.tick())
        return att_id

    # --- scripting and inspection ---------------------------------------------------------------

    def script(self, prefix: str, *, status: int, body: Any = None, headers: dict[str, str] | None = None,
               times: int = 1) -> None:
        """The next `times` calls whose path starts with `prefix` get this answer."""
        for _ in range(times):
            self._scripts.append(_Script(prefix, status, body, headers or {}))

    def rate_limit(self, prefix: str, *, retry_after: int, times: int = 1) -> None:
        self.script(prefix, status=429, body={"message": "Rate limit exceeded"},
                    headers={"Retry-After": str(retry_after)}, times=times)

    def calls_to(self, prefix: str) -> list[Call]:
        return [c for c in self.calls if c.path.startswith(prefix)]

    # --- plumbing -------------------------------------------------------------------------------

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Any) -> web.StreamResponse:
        path = request.path
        self.calls.append(Call(path, dict(request.query), request.headers.get("Authorization")))
        v2 = path.startswith("/wiki/api/v2/")
        for script in self._scripts:
            if path.startswith(script.prefix):
                self._scripts.remove(script)
                return web.json_response(script.body, status=script.status, headers=script.headers)
        if path.startswith("/media/"):
            return await handler(request)  # the media service checks its own token, not the account's
        expected = "Basic " + base64.b64encode(f"{self.email}:{self.token}".encode()).decode()
        if request.headers.get("Authorization") != expected:
            if v2:
                return _v2_error(401, "UNAUTHORIZED", "Unauthorized; scope does not match")
            return web.json_response({"statusCode": 401, "data": {"authorized": False, "valid": True,
                                                                   "errors": [], "successful": False},
                                      "message": "Client must be authenticated to access this resource."},
                                     status=401)
        if self.forbidden:
            if v2:
                return _v2_error(403, "FORBIDDEN", "Current user not permitted to use Confluence")
            return web.json_response({"statusCode": 403, "message": "Current user not permitted to use Confluence"},
                                     status=403)
        return await handler(request)

    def _space_json(self, key: str) -> dict[str, Any]:
        space = self.spaces[key]
        return {"id": int(space["id"]), "key": key, "name": space["name"], "type": "global", "status": "current",
                "_links": {"webui": f"/spaces/{key}", "self": f"{self.url}/rest/api/space/{key}"},
                "_expandable": {"homepage": "", "icon": "", "description": "", "metadata": ""}}

    def _webui(self, page: FakePage) -> str:
        return f"/spaces/{page.space}/pages/{page.id}/{quote(page.title.replace(' ', '+'), safe='+')}"

    def _version(self, version: int, when: datetime) -> dict[str, Any]:
        return {"by": {"type": "known", "accountId": "5b10ac8d82e05b22cc7d4ef5", "displayName": "Ana Admin"},
                "when": when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "friendlyWhen": "Jan 10, 2024",
                "message": "", "number": version, "minorEdit": False, "contentTypeModified": False}

    def _ancestors(self, page: FakePage) -> list[FakePage]:
        chain, parent = [], page.parent
        while parent:
            chain.insert(0, self.pages[parent])
            parent = self.pages[parent].parent
        return chain

    def _page_ref(self, page: FakePage) -> dict[str, Any]:
        return {"id": page.id, "type": "page", "status": page.status, "title": page.title,
                "_links": {"webui": self._webui(page), "self": f"{self.url}/rest/api/content/{page.id}"}}

    def _content_json(self, item: FakePage | FakeAttachment, expand: set[str]) -> dict[str, Any]:
        expandable: dict[str, str] = {}
        if isinstance(item, FakePage):
            out = self._page_ref(item) | {"extensions": {"position": 0}}
            out["_links"] |= {"edit": f"/pages/resumedraft.action?draftId={item.id}", "tinyui": "/x/AQAB"}
            space = item.space
            if "ancestors" in expand:
                out["ancestors"] = [self._page_ref(a) for a in self._ancestors(item)]
            else:
                expandable["ancestors"] = ""
        else:
            page = self.pages[item.page]
            space = page.space
            file_name = quote(item.title)
            out = {"id": item.id, "type": "attachment", "status": item.status, "title": item.title,
                   "metadata": {"mediaType": item.media_type},
                   "extensions": {"mediaType": item.media_type, "fileSize": len(item.data), "comment": "",
                                  "mediaTypeDescription": item.media_type, "fileId": f"f-{item.id}",
                                  "collectionName": f"contentId-{page.id}"},
                   "_links": {"webui": f"/pages/viewpageattachments.action?pageId={page.id}&preview="
                                       f"%2F{page.id}%2F{item.id[3:]}%2F{file_name}",
                              "download": f"/download/attachments/{page.id}/{file_name}?version={item.version}"
                                          f"&modificationDate={int(item.when.timestamp() * 1000)}&cacheVersion=1"
                                          f"&api=v2",
                              "self": f"{self.url}/rest/api/content/{item.id}"}}
            if "container" in expand:
                out["container"] = self._page_ref(page)
            else:
                expandable["container"] = f"/rest/api/content/{page.id}"
        if "version" in expand:
            out["version"] = self._version(item.version, item.when)
        else:
            expandable["version"] = ""
        if "space" in expand:
            out["space"] = self._space_json(space)
        else:
            expandable["space"] = f"/rest/api/space/{space}"
        out["_expandable"] = expandable
        return out

    # --- handlers -------------------------------------------------------------------------------

    async def _spaces(self, request: web.Request) -> web.Response:
        keys = [k for k in request.query.get("keys", "").split(",") if k]
        found = [k for k in self.spaces if not keys or k in keys]
        results = [{"id": self.spaces[k]["id"], "key": k, "name": self.spaces[k]["name"], "type": "global",
                    "status": "current", "authorId": "5b10ac8d82e05b22cc7d4ef5",
                    "createdAt": "2023-05-01T10:00:00.000Z", "homepageId": None, "spaceOwnerId": None,
                    "icon": None, "_links": {"webui": f"/spaces/{k}"}} for k in found]
        return web.json_response({"results": results, "_links": {"base": self.url}})

    async def _page(self, request: web.Request) -> web.Response:
        page = self.pages.get(request.match_info["id"])
        if page is None or page.status != "current":
            return _v2_error(404, "NOT_FOUND", "Not Found")
        fmt = request.query.get("body-format")
        body: dict[str, Any] = {}
        if fmt == "storage":
            body = {"storage": {"representation": "storage", "value": page.body}}
        elif fmt in ("view", "export_view"):
            body = {fmt: {"representation": fmt, "value": _render(page.body)}}
        elif fmt is not None:
            return _v2_error(400, "INVALID_REQUEST_PARAMETER", f"Invalid value for body-format: {fmt}")
        return web.json_response({
            "id": page.id, "status": page.status, "title": page.title, "spaceId": self.spaces[page.space]["id"],
            "parentId": page.parent, "parentType": "page" if page.parent else None, "position": 0,
            "authorId": "5b10ac8d82e05b22cc7d4ef5", "ownerId": "5b10ac8d82e05b22cc7d4ef5",
            "createdAt": page.when.strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "version": {"createdAt": page.when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "message": "",
                        "number": page.version, "minorEdit": False, "authorId": "5b10ac8d82e05b22cc7d4ef5"},
            "body": body,
            "_links": {"editui": f"/pages/resumedraft.action?draftId={page.id}", "webui": self._webui(page),
                       "tinyui": "/x/AQAB", "base": self.url}})

    async def _attachment(self, request: web.Request) -> web.Response:
        att = self.attachments.get(request.match_info["id"])
        if att is None or att.status != "current":
            return _v2_error(404, "NOT_FOUND", "Not Found")
        links = self._content_json(att, set())["_links"]
        return web.json_response({
            "id": att.id, "status": att.status, "title": att.title, "pageId": att.page,
            "createdAt": att.when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "mediaType": att.media_type,
            "mediaTypeDescription": att.media_type, "comment": "", "fileId": f"f-{att.id}",
            "fileSize": len(att.data), "webuiLink": links["webui"], "downloadLink": links["download"],
            "version": {"createdAt": att.when.strftime("%Y-%m-%dT%H:%M:%S.000Z"), "number": att.version},
            "_links": {"webui": links["webui"], "download": links["download"], "base": self.url}})

    async def _search(self, request: web.Request) -> web.Response:
        query = request.query
        cql = query.get("cql", "")
        try:
            matches = self._match(cql)
        except ValueError as exc:
            return web.json_response({"statusCode": 400, "data": {"authorized": True, "valid": False, "errors": [],
                                                                   "successful": False},
                                      "message": f"Could not parse cql : {cql} ({exc})"}, status=400)
        limit = min(int(query.get("limit", 25)), self.max_limit)
        start = 0
        if "cursor" in query:
            if query["cursor"] not in self._cursors:
                return web.json_response({"statusCode": 400, "message": "Invalid cursor"}, status=400)
            start = self._cursors[query["cursor"]]
        expand = {e for e in query.get("expand", "").split(",") if e}
        chunk = matches[start:start + limit]
        links: dict[str, str] = {"base": self.url, "context": "/wiki",
                                 "self": f"{self.url}/rest/api/content/search?{urlencode({'cql': cql})}"}
        if start + limit < len(matches):
            token = secrets.token_urlsafe(12)
            self._cursors[token] = start + limit
            params = {"next": "true", "cursor": token, "limit": limit, "start": start + limit, "cql": cql}
            if query.get("expand"):
                params["expand"] = query["expand"]
            links["next"] = "/rest/api/content/search?" + urlencode(params)
        return web.json_response({"results": [self._content_json(i, expand) for i in chunk], "start": start,
                                  "limit": limit, "size": len(chunk), "_links": links})

    def _match(self, cql: str) -> list[FakePage | FakeAttachment]:
        """The CQL the source writes: `type = X and space in (…)` [and label in (…)]
        [and (id = N or ancestor = N)] [and lastmodified >= "yyyy-MM-dd HH:mm"]."""
        rest = cql
        found: dict[str, Any] = {}
        patterns = {
            "type": r"type = (page|attachment)",
            "space": r"space in \(((?:\"[^\"]*\"(?:, )?)+)\)",
            "label": r"label in \(((?:\"[^\"]*\"(?:, )?)+)\)",
            "ancestor": r"\(id = (\d+) or ancestor = \1\)",
            "since": r"lastmodified >= \"(\d{4}-\d\d-\d\d \d\d:\d\d)\"",
        }
        for name, pattern in patterns.items():
            m = re.search(pattern, rest)
            if m:
                found[name] = m.group(1)
                rest = rest[:m.start()] + rest[m.end():]
        if "type" not in found or "space" not in found or re.sub(r"\band\b|\s", "", rest):
            raise ValueError(f"unexpected clause near {rest.strip()!r}")
        spaces = set(re.findall(r"\"([^\"]*)\"", found["space"]))
        labels = set(re.findall(r"\"([^\"]*)\"", found.get("label", "")))
        since = None
        if "since" in found:
            since = datetime.strptime(found["since"], "%Y-%m-%d %H:%M").replace(tzinfo=self.user_tz)

        def page_ok(page: FakePage) -> bool:
            if page.status != "current" or page.space not in spaces:
                return False
            if labels and not labels & set(page.labels):
                return False
            if "ancestor" in found and found["ancestor"] != page.id and \
                    found["ancestor"] not in {a.id for a in self._ancestors(page)}:
                return False
            return True

        def fresh(when: datetime) -> bool:
            return since is None or when.replace(second=0, microsecond=0) >= since

        items: list[FakePage | FakeAttachment]
        if found["type"] == "page":
            items = [p for p in self.pages.values() if page_ok(p) and fresh(p.when)]
        else:
            if labels or "ancestor" in found:
                raise ValueError("the source filters attachments by their pages")
            items = [a for a in self.attachments.values() if a.status == "current"
                     and self.pages[a.page].space in spaces and self.pages[a.page].status == "current"
                     and fresh(a.when)]
        return sorted(items, key=lambda i: int(re.sub(r"\D", "", i.id)))

    async def _download(self, request: web.Request) -> web.StreamResponse:
        name, page = request.match_info["name"], request.match_info["page"]
        att = next((a for a in self.attachments.values() if a.page == page and a.title == name
                    and a.status == "current"), None)
        if att is None:
            return web.json_response({"statusCode": 404, "message": "Attachment not found"}, status=404)
        token = secrets.token_urlsafe(8)
        self._media[token] = att.id
        # another origin, as api.media.atlassian.com is: a client must not carry the account's credentials there
        media = f"http://localhost:{self.port}/media/file/{token}/binary"
        raise web.HTTPFound(f"{media}?client=confluence&name={quote(name)}")

    async def _media_binary(self, request: web.Request) -> web.Response:
        att_id = self._media.get(request.match_info["token"])
        if att_id is None:
            return web.json_response({"error": "invalid token"}, status=401)
        att = self.attachments[att_id]
        return web.Response(body=att.data, content_type=att.media_type,
                            headers={"Content-Disposition": f'attachment; filename="{att.title}"'})


def _v2_error(status: int, code: str, title: str) -> web.Response:
    return web.json_response({"errors": [{"status": status, "code": code, "title": title, "detail": None}]},
                             status=status)


def _render(storage: str) -> str:
    """Storage → view, as far as the tests need: a table-of-contents macro becomes the list of the
    page's headings Confluence renders, other macros their bodies."""
    headings = re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>", storage)
    toc = '<div class="toc-macro client-side-toc-macro"><ul>' + "".join(
        f'<li><span class="toc-item-body"><a href="#{quote(h)}">{h}</a></span></li>' for h in headings) + "</ul></div>"
    view = re.sub(r'<ac:structured-macro ac:name="toc"[^>]*?(/>|>.*?</ac:structured-macro>)', toc, storage, flags=re.S)
    view = re.sub(r'<ac:structured-macro ac:name="code"[^>]*>.*?<ac:plain-text-body><!\[CDATA\[(.*?)\]\]>'
                  r"</ac:plain-text-body></ac:structured-macro>",
                  r'<div class="code panel"><pre class="syntaxhighlighter-pre">\1</pre></div>', view, flags=re.S)
    view = re.sub(r"<ac:structured-macro[^>]*>.*?<ac:rich-text-body>(.*?)</ac:rich-text-body>.*?"
                  r"</ac:structured-macro>", r'<div class="confluence-information-macro">\1</div>', view, flags=re.S)
    return view
