"""Confluence Cloud as a knowledge source: the pages of one or more spaces, and their attachments.

Listing uses CQL search (`GET /wiki/rest/api/content/search`): one paginated query lists every
page of the spaces, or only those modified since a date, each with its version, ancestors and
link; a second lists their attachments. The v2 API has no search and no "changed since" filter,
and lists attachments page by page (a call per page). Reading uses v2: `GET /wiki/api/v2/pages/{id}`
for a body, `GET /wiki/api/v2/spaces?keys=` to check the spaces exist, and each attachment's own
download link for its bytes. Plain HTTP through `SourceHTTP` (async, the shared back-off and error
lines) rather than atlassian-python-api (synchronous requests, its own retries): see
docs/sources-confluence.md, which also says how changes and deletions are found.
"""

from __future__ import annotations

import asyncio
import html
import re
import time
from datetime import datetime, timedelta, timezone
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig, SourceError
from agent.sources.http import SourceHTTP

if TYPE_CHECKING:
    import httpx  # the client is imported when a source first connects: `askdesk ask` loads the plug-ins

SEARCH_LIMIT = 100  # results per CQL search call (Confluence may cap it lower; `_links.next` is followed)
PAGE_EXPAND = "version,ancestors,space"
ATTACHMENT_EXPAND = "version,container,space"
# CQL compares `lastmodified` in the account's own time zone (UTC-12 … UTC+14) and the search
# index lags edits by seconds to minutes: an incremental listing asks from this long before the
# newest change it saw, and the engine skips the versions it already holds.
CHANGES_OVERLAP = timedelta(hours=24)
DEFAULT_ATTACHMENT_TYPES = [".pdf", ".docx", ".pptx", ".xlsx", ".xlsm", ".md", ".txt", ".html", ".htm", ".csv"]


class ConfluenceConfig(SourceConfig):
    """One `kind: confluence` entry of sources.yaml."""

    kind: Literal["confluence"] = "confluence"
    url: str  # the site's wiki base: https://acme.atlassian.net/wiki
    space: list[str] = Field(min_length=1)  # space keys: HR, or [HR, IT]
    email_env: str = "CONFLUENCE_EMAIL"  # variable holding the account's email (Basic auth user)
    token_env: str = "CONFLUENCE_TOKEN"  # variable holding its API token
    attachments: bool = True
    attachment_types: list[str] = Field(default_factory=lambda: list(DEFAULT_ATTACHMENT_TYPES))
    max_attachment_mb: float = Field(default=50, gt=0)
    labels: list[str] = Field(default_factory=list)  # only pages with one of these labels
    ancestor: str | None = Field(default=None, pattern=r"^\d+$")  # only this page and those under it
    body_format: Literal["export_view", "view", "storage"] = "export_view"
    # how often a listing is complete (every id, so deletions show); 0: every run
    full_listing_hours: float = Field(default=1.0, ge=0)

    @field_validator("url")
    @classmethod
    def _wiki_base(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ValueError("url must be the site's address, e.g. https://acme.atlassian.net/wiki")
        path = parts.path.rstrip("/") or "/wiki"  # Confluence Cloud lives under /wiki
        return f"{parts.scheme}://{parts.netloc}{path}"

    @field_validator("space", "labels", "attachment_types", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [v.strip() for v in value.split(",") if v.strip()]
        return value

    @field_validator("space")
    @classmethod
    def _space_keys(cls, value: list[str]) -> list[str]:
        bad = [k for k in value if not re.fullmatch(r"~?[A-Za-z0-9_-]{1,255}", k)]
        if bad:
            raise ValueError(f"not a space key: {', '.join(bad)} (the key is in the space's URL: /spaces/KEY)")
        return value

    @field_validator("attachment_types")
    @classmethod
    def _suffixes(cls, value: list[str]) -> list[str]:
        return [("." + v.lower().lstrip(".")) for v in value]


# --- the API's shapes (only the fields used) ----------------------------------------------------

class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Links(_Model):
    webui: str | None = None
    download: str | None = None
    base: str | None = None
    context: str | None = None
    next: str | None = None


class _Version(_Model):
    number: int
    when: datetime | None = None

    @field_validator("when")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        return value.replace(tzinfo=timezone.utc) if value is not None and value.tzinfo is None else value


class _SpaceRef(_Model):
    key: str = ""
    name: str = ""


class _ContentRef(_Model):
    id: str
    type: str = ""
    title: str = ""


class _Content(_Model):
    """A CQL search result: a page or an attachment."""

    id: str
    type: str
    title: str = ""
    version: _Version
    ancestors: list[_ContentRef] = Field(default_factory=list)
    container: _ContentRef | None = None
    space: _SpaceRef | None = None
    extensions: dict[str, Any] = Field(default_factory=dict)
    links: _Links = Field(default_factory=_Links, alias="_links")


class _SearchPage(_Model):
    results: list[_Content]
    links: _Links = Field(default_factory=_Links, alias="_links")


class _Space(_Model):
    id: str
    key: str
    name: str = ""


class _SpacesPage(_Model):
    results: list[_Space]


class _Cursor(_Model):
    """What `changes` hands back: the newest change seen and when the last complete listing ran."""

    since: datetime | None = None
    full: float = 0.0  # time.time() of the last complete listing


# --- the source -----------------------------------------------------------------------------------

class ConfluenceSource(Source):
    """Pages and attachments of Confluence Cloud spaces, over the REST API with an API token."""

    kind = "confluence"
    config_class = ConfluenceConfig

    def __init__(self, config: SourceConfig, *, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 transport: httpx.AsyncBaseTransport | None = None, clock: Callable[[], float] = time.time) -> None:
        if not isinstance(config, ConfluenceConfig):
            config = ConfluenceConfig.model_validate(config.model_dump())
        super().__init__(config)
        self.config: ConfluenceConfig = config
        self._sleep, self._transport, self._clock = sleep, transport, clock
        self._http: SourceHTTP | None = None

    @classmethod
    def env_variables(cls) -> list[str]:
        # the default names; a source naming others in email_env/token_env reads those instead
        return ["CONFLUENCE_EMAIL", "CONFLUENCE_TOKEN"]

    @property
    def http(self) -> SourceHTTP:
        """The client, made on first use so a missing variable is this source's error, not the load's."""
        if self._http is None:
            email = self.secret(self.config.email_env, "email")
            token = self.secret(self.config.token_env, "token")
            import httpx

            self._http = SourceHTTP(self.name, auth=httpx.BasicAuth(email, token), sleep=self._sleep,
                                    headers={"Accept": "application/json"}, transport=self._transport)
        return self._http

    async def close(self) -> None:
        if self._http is not None:
            await self._http.close()
            self._http = None

    # --- listing -----------------------------------------------------------------------------

    async def changes(self, cursor: str | None) -> Listing:
        """Everything (first run, every `full_listing_hours`, or with label/ancestor filters,
        whose pages can leave the filter unseen), else what was modified since the cursor."""
        state = _parse_cursor(cursor)
        spaces = await self._spaces()
        now = self._clock()
        filtered = bool(self.config.labels or self.config.ancestor)
        complete = (state is None or state.since is None or filtered
                    or now - state.full >= self.config.full_listing_hours * 3600)
        since = None if complete else _cql_time(state.since - CHANGES_OVERLAP)  # type: ignore[union-attr]
        pages, base = await self._search(self._cql("page", spaces, since), PAGE_EXPAND)
        attachments: list[_Content] = []
        if self.config.attachments:
            attachments, _ = await self._search(self._cql("attachment", spaces, since), ATTACHMENT_EXPAND)
        names = {s.key.upper(): s.name or s.key for s in spaces}
        documents = [self._page(p, base, names) for p in pages]
        page_ids = {p.id for p in pages}
        documents += [self._attachment(a, base, names) for a in attachments
                      if self._wanted(a, page_ids if complete else None)]
        # a search paged while the index changes can repeat a result: one entry per document
        documents = list({d.ref: d for d in documents}.values())
        seen = [c.version.when for c in [*pages, *attachments] if c.version.when]
        newest = max([*seen, *([state.since] if state and state.since else [])], default=None)
        full = now if complete else state.full  # type: ignore[union-attr]
        return Listing(documents=documents, complete=complete,
                       cursor=_Cursor(since=newest, full=full).model_dump_json())

    async def _spaces(self) -> list[_Space]:
        """The configured spaces as the site knows them (one call, which also proves the token)."""
        keys = self.config.space
        data = await self._get_json(f"{self.config.url}/api/v2/spaces", "the space list",
                                    params={"keys": ",".join(keys), "limit": 250})
        found = {s.key.upper(): s for s in self._parse(_SpacesPage, data, "the space list").results}
        missing = [k for k in keys if k.upper() not in found]
        if missing:
            raise SourceError(f"source {self.name!r}: Confluence space {', '.join(missing)} not found at "
                              f"{self.config.url} (or the account in {self.config.email_env} cannot view it): "
                              f"check `space`")
        return [found[k.upper()] for k in keys]

    def _cql(self, content_type: str, spaces: list[_Space], since: str | None) -> str:
        clauses = [f"type = {content_type}", f"space in ({', '.join(_quote(s.key) for s in spaces)})"]
        if content_type == "page" and self.config.labels:
            clauses.append(f"label in ({', '.join(_quote(label) for label in self.config.labels)})")
        if content_type == "page" and self.config.ancestor:
            clauses.append(f"(id = {self.config.ancestor} or ancestor = {self.config.ancestor})")
        if since:
            clauses.append(f'lastmodified >= "{since}"')
        return " and ".join(clauses)

    async def _search(self, cql: str, expand: str) -> tuple[list[_Content], str]:
        """Every result of a CQL search, following `_links.next`; and the site's web base."""
        url: str | None = f"{self.config.url}/rest/api/content/search"
        params: dict[str, Any] | None = {"cql": cql, "expand": expand, "limit": SEARCH_LIMIT}
        results: list[_Content] = []
        base, visited = self.config.url, set()
        while url:
            page = self._parse(_SearchPage, await self._get_json(url, "the search", params=params), "the search")
            results.extend(page.results)
            base = (page.links.base or base).rstrip("/")
            url, params = (self._follow(page.links) if page.results else None), None
            if url is not None and url in visited:
                raise SourceError(f"source {self.name!r}: Confluence search paging repeats itself at {url}")
            visited.add(url)
        return results, base

    def _follow(self, links: _Links) -> str | None:
        """`_links.next` as a URL: v1 gives it relative to the context (/wiki), v2 with it."""
        nxt = links.next
        if not nxt or nxt.startswith(("http://", "https://")):
            return nxt
        context = (links.context or "").rstrip("/")
        if context and nxt.startswith(context + "/"):
            nxt = nxt[len(context):]
        return self.config.url + nxt

    def _page(self, page: _Content, base: str, names: dict[str, str]) -> Listed:
        space = _space_name(page, names)
        path = " / ".join([space, *(a.title for a in page.ancestors if a.title)])
        return Listed(ref=page.id, version=str(page.version.number), title=page.title, path=path,
                      url=base + page.links.webui if page.links.webui else None, extra={"type": "page"})

    def _attachment(self, att: _Content, base: str, names: dict[str, str]) -> Listed:
        parent = att.container.title if att.container else ""
        link = att.links.webui or att.links.download
        return Listed(ref=att.id, version=str(att.version.number), title=att.title,
                      path=" / ".join(p for p in (_space_name(att, names), parent) if p),
                      url=base + link if link else None,
                      extra={"type": "attachment", "download": att.links.download,
                             "media_type": att.extensions.get("mediaType", ""),
                             "page": att.container.id if att.container else None})

    def _wanted(self, att: _Content, page_ids: set[str] | None) -> bool:
        """An attachment of a listed page (of a page at all, in a change feed), of a readable type
        and size; images and videos are left alone."""
        if att.container is None or att.container.type != "page":
            return False
        if page_ids is not None and att.container.id not in page_ids:
            return False
        size = att.extensions.get("fileSize")
        if isinstance(size, (int, float)) and size > self.config.max_attachment_mb * 1024 * 1024:
            return False
        return PurePosixPath(att.title).suffix.lower() in self.config.attachment_types

    # --- reading -----------------------------------------------------------------------------

    async def read(self, item: Listed) -> Fetched:
        kind = item.extra.get("type") or ("attachment" if item.ref.startswith("att") else "page")
        return await (self._read_attachment(item) if kind == "attachment" else self._read_page(item))

    async def _read_page(self, item: Listed) -> Fetched:
        fmt = self.config.body_format
        what = f"page {item.ref}"
        data = await self._get_json(f"{self.config.url}/api/v2/pages/{item.ref}", what, params={"body-format": fmt})
        body = (((data.get("body") or {}).get(fmt) or {}).get("value")) if isinstance(data, dict) else None
        if body is None:
            raise SourceError(f"source {self.name!r}: Confluence returned {what} without its {fmt} body")
        title = str(data.get("title") or item.title)
        links = data.get("_links") or {}
        url = item.url or (links["base"] + links["webui"] if links.get("base") and links.get("webui") else None)
        document = _page_html(title, url, body, fmt)
        return Fetched(filename=f"{_slug(title) or 'page-' + item.ref}.html", data=document.encode("utf-8"),
                       title=title, url=url)

    async def _read_attachment(self, item: Listed) -> Fetched:
        download = item.extra.get("download")
        if not download:  # a Listed saved without its extra: ask for the link again
            data = await self._get_json(f"{self.config.url}/api/v2/attachments/{item.ref}", f"attachment {item.ref}")
            download = (data.get("downloadLink") or (data.get("_links") or {}).get("download")) \
                if isinstance(data, dict) else None
            if not download:
                raise SourceError(f"source {self.name!r}: Confluence gave no download link for attachment {item.ref}")
        url = download if download.startswith(("http://", "https://")) else self.config.url + download
        response = await self._get(url, f"attachment {item.title or item.ref}", headers={"Accept": "*/*"})
        limit = self.config.max_attachment_mb * 1024 * 1024
        if len(response.content) > limit:
            raise SourceError(f"source {self.name!r}: attachment {item.title!r} is over max_attachment_mb "
                              f"({self.config.max_attachment_mb:g})")
        return Fetched(filename=item.title or item.ref, data=response.content, title=item.title, url=item.url)

    # --- HTTP with Confluence's own error lines ----------------------------------------------

    async def _get(self, url: str, what: str, **kwargs: Any) -> httpx.Response:
        response = await self.http.request("GET", url, ok=(400, 401, 403, 404), **kwargs)
        if response.status_code >= 400:
            raise SourceError(self._explain(response, what))
        return response

    async def _get_json(self, url: str, what: str, **kwargs: Any) -> Any:
        response = await self._get(url, what, **kwargs)
        try:
            return response.json()
        except ValueError as exc:
            raise SourceError(f"source {self.name!r}: Confluence answered {what} with something other than JSON "
                              f"(is {self.config.url} a Confluence site?)") from exc

    def _parse(self, model: type[_Model], data: Any, what: str) -> Any:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(part) for part in first["loc"])
            raise SourceError(f"source {self.name!r}: Confluence answered {what} in an unexpected shape "
                              f"({loc}: {first['msg']})") from exc

    def _explain(self, response: httpx.Response, what: str) -> str:
        status, cfg = response.status_code, self.config
        hint = {
            401: f"the credentials were rejected; check {cfg.token_env}, an API token of the account in "
                 f"{cfg.email_env} (a token with scopes also needs the read scopes in docs/sources-confluence.md)",
            403: f"the account in {cfg.email_env} may not read this; it needs Confluence access and View "
                 f"permission on space {', '.join(cfg.space)}",
            404: f"not found; check url ({cfg.url}) and that the account can view the space and page",
        }.get(status, "")
        detail = _error_detail(response)
        line = f"source {self.name!r}: Confluence answered {status} to {what}" + (f": {hint}" if hint else "") + \
            (f" (Confluence says: {detail})" if detail else "")
        return " ".join(line.split())


# --- helpers --------------------------------------------------------------------------------------

def _parse_cursor(cursor: str | None) -> _Cursor | None:
    if not cursor:
        return None
    try:
        return _Cursor.model_validate_json(cursor)
    except ValidationError:
        return None  # a cursor from another version of this code: list everything again


def _cql_time(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M")


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _space_name(content: _Content, names: dict[str, str]) -> str:
    key = content.space.key if content.space else ""
    return names.get(key.upper()) or (content.space.name if content.space else "") or key


def _slug(title: str) -> str:
    return re.sub(r"[^\w.-]+", "-", title).strip("-.")[:80]


def _error_detail(response: httpx.Response) -> str:
    """Atlassian's own words: v1 `{"statusCode", "message"}`, v2 `{"errors": [{"title", "detail"}]}`."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return text.splitlines()[0][:200] if text else ""
    if isinstance(body, dict):
        errors = body.get("errors")
        if isinstance(errors, list) and errors and isinstance(errors[0], dict):
            first = errors[0]
            return str(first.get("detail") or first.get("title") or first.get("code") or "")[:200]
        for key in ("message", "errorMessage", "error"):
            if isinstance(body.get(key), str) and body[key]:
                return body[key][:200]
    return ""


def _page_html(title: str, url: str | None, body: str, fmt: str) -> str:
    """A whole HTML document the HTML loader reads: title, canonical link (the page, for
    citations), and the body with Confluence's furniture removed."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser")
    # a table of contents repeats the headings as a list, which would be indexed twice
    for el in soup.select(".toc-macro, .client-side-toc-macro"):
        el.decompose()
    if fmt == "storage":
        for el in soup.find_all("ac:parameter"):  # a macro's settings, not its text
            el.decompose()
        for el in soup.find_all("ac:plain-text-body"):  # code blocks: CDATA inside a macro
            pre = soup.new_tag("pre")
            pre.string = el.get_text()
            el.replace_with(pre)
    head = f"<title>{html.escape(title)}</title>"
    if url:
        head += f'<link rel="canonical" href="{html.escape(url, quote=True)}">'
    return f'<!DOCTYPE html><html><head><meta charset="utf-8">{head}</head><body>{soup}</body></html>'


def register(r: Any) -> None:
    """The `askdesk.plugins` entry point (pyproject.toml: confluence = "agent.sources.confluence")."""
    r.source(ConfluenceSource)


__all__ = ["ConfluenceConfig", "ConfluenceSource", "register"]
