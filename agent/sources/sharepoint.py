"""SharePoint document libraries and OneDrive drives, through Microsoft Graph.

Plain HTTP through `SourceHTTP` (its 429/503 Retry-After and 5xx back-off) plus one form POST
for an app-only token: msgraph-sdk would bring kiota, azure-identity and azure-core for the
handful of calls below, and neither it nor msal accepts a non-https authority, so neither could
be pointed at the local fake the tests use (docs/sources-sharepoint.md).

Changes are followed with the drive's delta query: the `@odata.deltaLink` of the last page is
the cursor, and the next sync asks it for what changed since. An item keeps its id through
renames and moves, so those are changes of path and title, never new documents. Delta omits
`parentReference.path`, so paths are rebuilt from the folders the listing carries (a delta
includes the ancestors of every changed item) and, failing that, by asking for the parent.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Awaitable, Callable, Literal
from urllib.parse import quote, unquote, urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent.knowledge.loaders import SUPPORTED_SUFFIXES
from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig, SourceError
from agent.sources.http import SourceHTTP

if TYPE_CHECKING:
    import httpx  # the client is imported when a source first connects: `askdesk ask` loads the plug-ins

log = logging.getLogger("askdesk.sources.sharepoint")

GRAPH_URL = "https://graph.microsoft.com"
LOGIN_URL = "https://login.microsoftonline.com"
GRAPH_SCOPE = "https://graph.microsoft.com/.default"
# Office files are what SharePoint mostly holds; they are listed even before a loader reads
# them, so the engine reports them by name instead of silently never seeing them
OFFICE_SUFFIXES = {".docx", ".pptx", ".xlsx"}
# what a delta answers (410 Gone, usually) when it cannot continue from a token
RESYNC_CODES = {"resyncchangesapplydifferences", "resyncchangesuploaddifferences", "resyncrequired",
                "syncstatenotfound"}
TOKEN_MARGIN_S = 300  # renew an app token this long before Microsoft says it expires


def readable_suffixes() -> set[str]:
    """What the loaders read, looked up at call time so new loaders widen the listing."""
    return {s.lower() for s in SUPPORTED_SUFFIXES} | OFFICE_SUFFIXES


class SharePointConfig(SourceConfig):
    """`kind: sharepoint` in sources.yaml: one drive (a site's document library or a OneDrive),
    optionally narrowed to a folder. Secrets come from the environment variables named here."""

    kind: Literal["sharepoint"] = "sharepoint"
    site: str | None = None  # acme.sharepoint.com:/sites/HR (or its https:// address)
    library: str | None = None  # a document library of `site` by name; unset: the site's default
    drive_id: str | None = None  # instead of `site`: a drive id (any library or OneDrive)
    folder: str = ""  # a path inside the drive: only files under it are listed
    tenant_id_env: str = "SHAREPOINT_TENANT_ID"
    client_id_env: str = "SHAREPOINT_CLIENT_ID"
    client_secret_env: str = "SHAREPOINT_CLIENT_SECRET"
    graph_url: str = GRAPH_URL
    login_url: str = LOGIN_URL
    scope: str = GRAPH_SCOPE  # national clouds: https://graph.microsoft.us/.default, …

    @field_validator("graph_url", "login_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")

    @field_validator("folder")
    @classmethod
    def _folder(cls, value: str) -> str:
        return "/".join(part for part in value.replace("\\", "/").split("/") if part)

    @field_validator("site")
    @classmethod
    def _site(cls, value: str | None) -> str | None:
        if value is None:
            return None
        host, path = split_site(value)
        return f"{host}:{path}" if path else host

    @model_validator(mode="after")
    def _one_drive(self) -> "SharePointConfig":
        if bool(self.site) == bool(self.drive_id):
            raise ValueError("give exactly one of `site` (acme.sharepoint.com:/sites/HR) or `drive_id`")
        if self.library and not self.site:
            raise ValueError("`library` names a document library of `site`; with `drive_id` leave it out")
        return self


def split_site(value: str) -> tuple[str, str]:
    """("acme.sharepoint.com", "/sites/HR") from `acme.sharepoint.com:/sites/HR`,
    `acme.sharepoint.com/sites/HR` or `https://acme.sharepoint.com/sites/HR/`."""
    text = value.strip()
    if "://" in text:
        parts = urlsplit(text)
        host, path = parts.netloc, unquote(parts.path)
    else:
        host, _, path = text.replace(":/", "/", 1).partition("/")
        path = "/" + path
    host = host.strip().rstrip(":")
    path = "/" + "/".join(p for p in path.split("/") if p) if path.strip("/") else ""
    if not host or "." not in host:
        raise ValueError(f"site {value!r} should be a host name and a path, e.g. acme.sharepoint.com:/sites/HR")
    return host, path.rstrip(":")


# --- what Graph answers (only the fields used) -------------------------------------------------


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class ItemReference(_Lenient):
    id: str | None = None
    drive_id: str | None = Field(default=None, alias="driveId")
    path: str | None = None  # "/drives/{id}/root:/A/B"; absent in delta answers


class DriveItem(_Lenient):
    id: str
    name: str = ""
    e_tag: str | None = Field(default=None, alias="eTag")
    c_tag: str | None = Field(default=None, alias="cTag")
    web_url: str | None = Field(default=None, alias="webUrl")
    size: int | None = None
    last_modified: str | None = Field(default=None, alias="lastModifiedDateTime")
    parent: ItemReference | None = Field(default=None, alias="parentReference")
    file: dict[str, Any] | None = None
    folder: dict[str, Any] | None = None
    package: dict[str, Any] | None = None  # OneNote notebooks and the like: folders to Graph
    root: dict[str, Any] | None = None
    deleted: dict[str, Any] | None = None

    @property
    def is_container(self) -> bool:
        return self.folder is not None or self.package is not None or self.root is not None


class DeltaPage(_Lenient):
    value: list[DriveItem] = Field(default_factory=list)
    next_link: str | None = Field(default=None, alias="@odata.nextLink")
    delta_link: str | None = Field(default=None, alias="@odata.deltaLink")


class Drive(_Lenient):
    id: str
    name: str = ""
    web_url: str | None = Field(default=None, alias="webUrl")


class DriveList(_Lenient):
    value: list[Drive] = Field(default_factory=list)
    next_link: str | None = Field(default=None, alias="@odata.nextLink")


class Site(_Lenient):
    id: str
    display_name: str = Field(default="", alias="displayName")


class TokenAnswer(_Lenient):
    access_token: str
    expires_in: int = 3599


class _GraphErrorBody(_Lenient):
    code: str = ""
    message: str = ""


class GraphError(_Lenient):
    error: _GraphErrorBody


# --- the source ------------------------------------------------------------------------------


class SharePointSource(Source):
    """A SharePoint document library or a OneDrive, listed with delta queries."""

    kind = "sharepoint"
    config_class = SharePointConfig
    config: SharePointConfig

    def __init__(self, config: SourceConfig, *, sleep: Callable[[float], Awaitable[None]] | None = None,
                 attempts: int = 5, transport: httpx.AsyncBaseTransport | None = None) -> None:
        if not isinstance(config, SharePointConfig):
            config = SharePointConfig.model_validate(config.model_dump())
        super().__init__(config)
        # no default headers: the bearer token is added per request to Graph only, so the
        # pre-authenticated download host never receives it
        self.http = SourceHTTP(config.name, attempts=attempts, sleep=sleep or asyncio.sleep, transport=transport)
        self._token = ""
        self._token_until = 0.0
        self._token_lock = asyncio.Lock()
        self._drive: Drive | None = None

    @classmethod
    def env_variables(cls) -> list[str]:
        fields = SharePointConfig.model_fields
        return [str(fields[key].default) for key in ("tenant_id_env", "client_id_env", "client_secret_env")]

    async def close(self) -> None:
        await self.http.close()

    # --- listing --------------------------------------------------------------------------------

    async def changes(self, cursor: str | None) -> Listing:
        drive = await self._resolve_drive()
        scope = await self._resolve_folder(drive)
        start = f"{self._v1}/drives/{quote(drive.id, safe='!')}/root/delta"
        url, complete = start, True
        if cursor:
            if self._continues(cursor, drive):
                url, complete = cursor, False
            else:
                log.info("source %s: the saved cursor belongs to another drive or Graph; listing everything",
                         self.name)
        items, delta_link, complete = await self._delta(url, start, complete)
        if not complete and _folder_changed(items):
            # a renamed, moved or deleted folder: its files' paths and links changed, but delta
            # names only the folder, so list everything once (metadata only; nothing is downloaded
            # whose version is unchanged)
            log.info("source %s: a folder was renamed, moved or deleted; listing everything", self.name)
            items, delta_link, complete = await self._delta(start, start, True)
        documents = await self._documents(items, complete, drive, scope)
        return Listing(documents=documents, complete=complete, cursor=delta_link)

    async def _delta(self, url: str, start: str, complete: bool) -> tuple[list[DriveItem], str, bool]:
        """Every page of one delta round, the last occurrence of each item kept (Graph may name
        an item twice). An expired token (410) restarts from scratch as a complete listing."""
        seen: dict[str, DriveItem] = {}
        restarts = 0
        while True:
            response = await self._graph("GET", url, "the drive's changes", ok=(400, 410))
            code = _graph_error(response)[0].lower() if response.status_code >= 400 else ""
            if response.status_code == 410 or code in RESYNC_CODES:
                restarts += 1
                if restarts > 3:
                    raise SourceError(f"source {self.name!r}: Graph keeps asking for a resync of the drive "
                                      f"({code or 'HTTP 410'}); try again later")
                log.info("source %s: Graph answered %s (%s); listing the drive from scratch", self.name,
                         response.status_code, code or "resync")
                location = response.headers.get("Location", "")
                url = location if location and self._is_graph(location) else start
                seen, complete = {}, True
                continue
            if response.status_code >= 400:
                raise SourceError(self._graph_message(response, "the drive's changes"))
            try:
                page = DeltaPage.model_validate(response.json())
            except (ValueError, ValidationError) as exc:
                raise SourceError(f"source {self.name!r}: Graph's delta answer was not a page of drive items "
                                  f"({type(exc).__name__})") from exc
            for item in page.value:
                seen.pop(item.id, None)
                seen[item.id] = item
            if page.next_link:
                url = self._checked_link(page.next_link)
            elif page.delta_link:
                return list(seen.values()), page.delta_link, complete
            else:
                raise SourceError(f"source {self.name!r}: Graph's delta page had neither @odata.nextLink "
                                  "nor @odata.deltaLink")

    async def _documents(self, items: list[DriveItem], complete: bool, drive: Drive,
                         scope: str) -> list[Listed]:
        """Files askdesk reads, under the folder; in a change feed, anything else that changed
        (deleted, moved out of the folder, renamed to an unread type) comes as a removal."""
        containers = {item.id: item for item in items if item.is_container}
        paths: dict[str, str] = {}
        suffixes = readable_suffixes()
        documents: list[Listed] = []
        for item in items:
            if item.is_container:
                continue
            if item.deleted is not None:
                if not complete:
                    documents.append(Listed(ref=item.id, version="", title=_stem(item.name), deleted=True))
                continue
            if item.file is None:
                continue
            path = _join(await self._folder_path(item, containers, paths), item.name)
            wanted = PurePosixPath(item.name).suffix.lower() in suffixes and _under(path, scope)
            if not wanted:
                if not complete:
                    documents.append(Listed(ref=item.id, version="", title=_stem(item.name), path=path,
                                            deleted=True))
                continue
            documents.append(Listed(
                ref=item.id,
                version=item.c_tag or item.e_tag or item.last_modified or "",
                title=_stem(item.name),
                url=item.web_url,
                path=_join(drive.name, path),
                extra={"name": item.name, "size": item.size},
            ))
        return documents

    async def _folder_path(self, item: DriveItem, containers: dict[str, DriveItem], paths: dict[str, str]) -> str:
        """The drive-relative path of `item`'s folder ("" for the root): from `parentReference.path`
        where Graph gives it, else up the folders this listing holds, else by asking Graph."""
        parts: list[str] = []
        node: DriveItem | None = item
        visited: set[str] = set()
        while node is not None:
            parent = node.parent
            if parent is not None and parent.path is not None:
                parts.append(_relative(parent.path))
                break
            parent_id = parent.id if parent is not None else None
            if not parent_id or parent_id in visited:
                break
            if parent_id in paths:
                parts.append(paths[parent_id])
                break
            visited.add(parent_id)
            node = containers.get(parent_id) or await self._item(parent_id)
            if node is None or node.root is not None:
                break
            parts.append(node.name)
        path = "/".join(p for p in reversed(parts) if p)
        if item.parent is not None and item.parent.id:
            paths[item.parent.id] = path
        return path

    async def _item(self, item_id: str) -> DriveItem | None:
        drive = await self._resolve_drive()
        url = f"{self._v1}/drives/{quote(drive.id, safe='!')}/items/{quote(item_id, safe='!')}"
        response = await self._graph("GET", url, "a folder", ok=(404,),
                                     params={"$select": "id,name,root,folder,package,parentReference"})
        if response.status_code == 404:
            return None
        return DriveItem.model_validate(response.json())

    # --- reading --------------------------------------------------------------------------------

    async def read(self, item: Listed) -> Fetched:
        """The file's bytes. Graph answers 302 to a short-lived pre-authenticated URL on another
        host: that request goes without the bearer token, which is for Graph alone."""
        drive = await self._resolve_drive()
        name = str(item.extra.get("name") or "")
        if not name:  # a Listed rebuilt without `extra`: the suffix decides the loader, so ask
            known = await self._item(item.ref)
            name = known.name if known is not None and known.name else item.title or item.ref
        url = f"{self._v1}/drives/{quote(drive.id, safe='!')}/items/{quote(item.ref, safe='!')}/content"
        response = await self._graph("GET", url, f"file {name!r}", ok=(301, 302, 303, 307, 308),
                                     follow_redirects=False)
        if response.is_redirect:
            location = str(response.url.join(response.headers.get("Location", "")))
            response = await self.http.request("GET", location, ok=(401, 403, 404))
            if response.status_code in (401, 403, 404):
                raise SourceError(f"source {self.name!r}: the download link for {name!r} was refused "
                                  f"(HTTP {response.status_code}); it lasts minutes: sync again")
        return Fetched(filename=name, data=response.content, title=item.title, url=item.url)

    # --- Graph and the token --------------------------------------------------------------------

    @property
    def _v1(self) -> str:
        return f"{self.config.graph_url}/v1.0"

    async def _graph(self, method: str, url: str, what: str, *, ok: tuple[int, ...] = (),
                     **kwargs: Any) -> httpx.Response:
        """A Graph request with the app's token: renewed once on 401 (it expired mid-sync);
        401/403/404 otherwise become one line naming what was asked for."""
        self._checked_link(url)
        extra_headers = kwargs.pop("headers", {})
        for renew in (False, True):
            headers = {**extra_headers, "Authorization": f"Bearer {await self._access_token(renew=renew)}"}
            response = await self.http.request(method, url, headers=headers, ok=(401, 403, 404, *ok), **kwargs)
            status = response.status_code
            if status == 401 and not renew:
                continue
            if status in (401, 403, 404) and status not in ok:
                raise SourceError(self._graph_message(response, what))
            return response
        raise AssertionError("unreachable")

    def _graph_message(self, response: httpx.Response, what: str) -> str:
        code, message = _graph_error(response)
        status = response.status_code
        hint = {
            401: "Graph rejected the app's token: check the app registration's tenant",
            403: "the app lacks permission: grant it Sites.Read.All or Files.Read.All (Application) with "
                 "admin consent, or access to this site under Sites.Selected",
            404: "check `site`, `library`, `drive_id` and `folder`",
        }.get(status, "")
        detail = _one_line(f"{code}: {message}" if code and message else code or message or "no details", 200)
        return _one_line(f"source {self.name!r}: {what}: Graph answered {status} ({detail})"
                         + (f"; {hint}" if hint else ""))

    async def _access_token(self, *, renew: bool = False) -> str:
        """An app-only token (client credentials), cached until shortly before it expires."""
        async with self._token_lock:
            if self._token and not renew and time.monotonic() < self._token_until:
                return self._token
            cfg = self.config
            tenant = self.secret(cfg.tenant_id_env, "tenant_id")
            client_id = self.secret(cfg.client_id_env, "client_id")
            client_secret = self.secret(cfg.client_secret_env, "client_secret")
            url = f"{cfg.login_url}/{quote(tenant, safe='')}/oauth2/v2.0/token"
            form = {"grant_type": "client_credentials", "client_id": client_id, "client_secret": client_secret,
                    "scope": cfg.scope}
            response = await self.http.request("POST", url, data=form, ok=(400, 401, 403))
            if response.status_code >= 400:
                raise SourceError(self._sign_in_message(response))
            try:
                answer = TokenAnswer.model_validate(response.json())
            except (ValueError, ValidationError) as exc:
                raise SourceError(f"source {self.name!r}: Microsoft sign-in answered without an access token "
                                  f"({type(exc).__name__}); check login_url") from exc
            self._token = answer.access_token
            self._token_until = time.monotonic() + max(30, answer.expires_in - TOKEN_MARGIN_S)
            return self._token

    def _sign_in_message(self, response: httpx.Response) -> str:
        cfg = self.config
        try:
            body = response.json()
        except ValueError:
            body = {}
        error = str(body.get("error", "")) if isinstance(body, dict) else ""
        description = str(body.get("error_description", "")) if isinstance(body, dict) else ""
        reason = description.replace("\r", "\n").split("\n", 1)[0].strip()
        if "AADSTS7000215" in reason or "AADSTS7000222" in reason or error == "invalid_client":
            hint = f"check {cfg.client_secret_env}: it must be the secret's Value (not its ID) and not expired"
        elif "AADSTS700016" in reason or error == "unauthorized_client":
            hint = f"check {cfg.client_id_env} (the app's Application (client) ID) and {cfg.tenant_id_env}"
        elif "AADSTS90002" in reason or "AADSTS900023" in reason:
            hint = f"check {cfg.tenant_id_env} (the Directory (tenant) ID)"
        else:
            hint = f"check {cfg.tenant_id_env}, {cfg.client_id_env} and {cfg.client_secret_env}"
        detail = _one_line(": ".join(p for p in (error, reason) if p) or f"HTTP {response.status_code}", 240)
        return _one_line(f"source {self.name!r}: Microsoft sign-in refused the app ({detail}); {hint}")

    def _is_graph(self, url: str) -> bool:
        return _origin(url) == _origin(self.config.graph_url)

    def _checked_link(self, url: str) -> str:
        """Graph's links go back to Graph; anything else would be handed the token."""
        if not self._is_graph(url):
            raise SourceError(f"source {self.name!r}: refusing to send the Graph token to {_origin(url)} "
                              f"(graph_url is {self.config.graph_url})")
        return url

    def _continues(self, cursor: str, drive: Drive) -> bool:
        """Whether a saved deltaLink is this drive's (the config may have moved to another)."""
        if not self._is_graph(cursor):
            return False
        path = unquote(urlsplit(cursor).path)
        return "/drives/" not in path or f"/drives/{drive.id}/" in path

    # --- where the drive and the folder are -----------------------------------------------------

    async def _resolve_drive(self) -> Drive:
        if self._drive is not None:
            return self._drive
        cfg = self.config
        if cfg.drive_id:
            url = f"{self._v1}/drives/{quote(cfg.drive_id, safe='!')}"
            answer = await self._graph("GET", url, f"drive {cfg.drive_id!r}")
            self._drive = Drive.model_validate(answer.json())
            return self._drive
        host, path = split_site(cfg.site or "")
        site_url = f"{self._v1}/sites/{host}" + (f":{quote(path, safe='/')}" if path else "")
        site = Site.model_validate((await self._graph("GET", site_url, f"site {cfg.site!r}")).json())
        site_v1 = f"{self._v1}/sites/{quote(site.id, safe=',')}"
        if not cfg.library:
            answer = await self._graph("GET", f"{site_v1}/drive", f"the default library of {cfg.site!r}")
            self._drive = Drive.model_validate(answer.json())
            return self._drive
        drives: list[Drive] = []
        url: str | None = f"{site_v1}/drives"
        while url:
            page = DriveList.model_validate((await self._graph("GET", url, f"the libraries of {cfg.site!r}")).json())
            drives.extend(page.value)
            url = self._checked_link(page.next_link) if page.next_link else None
        for drive in drives:
            if drive.name.casefold() == cfg.library.casefold():
                self._drive = drive
                return drive
        names = ", ".join(sorted(d.name for d in drives)) or "none"
        raise SourceError(f"source {self.name!r}: site {cfg.site!r} has no library {cfg.library!r} "
                          f"(it has: {names})")

    async def _resolve_folder(self, drive: Drive) -> str:
        """The configured folder's drive-relative path ("" for the whole drive), checked to exist
        on every sync so a renamed folder is an error rather than an empty source."""
        folder = self.config.folder
        if not folder:
            return ""
        url = f"{self._v1}/drives/{quote(drive.id, safe='!')}/root:/{quote(folder, safe='/')}"
        item = DriveItem.model_validate((await self._graph("GET", url, f"folder {folder!r}")).json())
        if item.folder is None:
            raise SourceError(f"source {self.name!r}: {folder!r} in the drive is a file, not a folder")
        if item.parent is not None and item.parent.path is not None:
            return _join(_relative(item.parent.path), item.name)
        return folder


def _folder_changed(items: list[DriveItem]) -> bool:
    """A folder that changed on its own (renamed, moved, deleted; or created empty). Delta names
    the ancestors of every changed item too, so a folder that is nobody's parent here was
    itself the change."""
    parents = {item.parent.id for item in items if item.parent is not None and item.parent.id}
    for item in items:
        if item.root is not None or not (item.folder is not None or item.package is not None):
            continue
        if item.deleted is not None or item.id not in parents:
            return True
    return False


def _graph_error(response: httpx.Response) -> tuple[str, str]:
    """(code, message) of Graph's `{"error": {"code", "message"}}` body, or ("", "")."""
    try:
        body = GraphError.model_validate(response.json())
    except (ValueError, ValidationError):
        return "", ""
    return body.error.code, body.error.message


def _relative(path: str) -> str:
    """"A/B" from a parentReference path "/drives/{id}/root:/A/B" ("" for the root)."""
    _, _, rest = path.partition("root:")
    return "/".join(p for p in unquote(rest).split("/") if p)


def _join(*parts: str) -> str:
    return "/".join(p.strip("/") for p in parts if p and p.strip("/"))


def _under(path: str, folder: str) -> bool:
    return not folder or path.casefold().startswith(folder.casefold().rstrip("/") + "/")


def _stem(name: str) -> str:
    return PurePosixPath(name).stem if name else ""


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def _one_line(text: str, limit: int = 600) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def register(r: Any) -> None:
    r.source(SharePointSource)
