"""`kind: website`: an intranet or public site, from a start page or its sitemap.xml.

- Same origin only (scheme, host and port of `url`); robots.txt is honoured for askdesk's
  user agent.
- A sitemap's `<lastmod>` is a page's version, so an unchanged page is not even fetched; pages
  without one are fetched with `If-None-Match` / `If-Modified-Since` from the last sync (a 304
  keeps the old version). From a start page, links are followed breadth-first up to `max_pages`.
- The page's main text (navigation, footers and cookie banners dropped) is found by
  trafilatura, a kept library built for exactly this, and read by askdesk's HTML loader so
  headings and tables come out like every other document's.
- Every listing is complete (a site has no change feed): a page that is gone, or now
  disallowed, is removed. Linked PDFs and Office files on the same origin are documents too.

The cursor carries each page's validators and links (JSON), so the next sync asks the
server only what it must.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit
from urllib.robotparser import RobotFileParser
from xml.etree import ElementTree

from pydantic import Field

from agent.knowledge.loaders import SUPPORTED_SUFFIXES
from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig, SourceError, heading_anchors
from agent.sources.http import SourceHTTP

USER_AGENT = "askdesk"
DOCUMENT_SUFFIXES = SUPPORTED_SUFFIXES - {".html", ".htm", ".xhtml"}


class WebsiteConfig(SourceConfig):
    kind: str = "website"
    url: str = Field(pattern=r"^https?://")
    max_pages: int = Field(1000, gt=0)


def _origin(url: str) -> tuple[str, str]:
    parts = urlsplit(url)
    return parts.scheme, parts.netloc.lower()


class WebsiteSource(Source):
    kind = "website"
    config_class = WebsiteConfig

    def __init__(self, config: SourceConfig, http: SourceHTTP | None = None) -> None:
        super().__init__(config)
        self.http = http or SourceHTTP(config.name, headers={"User-Agent": USER_AGENT})
        self._pages: dict[str, bytes] = {}  # bodies fetched while listing, read without a second request

    @property
    def _config(self) -> WebsiteConfig:
        return self.config  # type: ignore[return-value]

    async def close(self) -> None:
        await self.http.close()

    def _same_origin(self, url: str) -> bool:
        return _origin(url) == _origin(self._config.url)

    async def _robots(self) -> RobotFileParser:
        scheme, host = _origin(self._config.url)
        robots = RobotFileParser()
        response = await self.http.request("GET", f"{scheme}://{host}/robots.txt", ok=(401, 403, 404, 410))
        if response.status_code in (401, 403):
            robots.disallow_all = True
        elif response.status_code < 300:
            robots.parse(response.text.splitlines())
        else:
            robots.allow_all = True
        return robots

    async def changes(self, cursor: str | None) -> Listing:
        before: dict[str, dict[str, Any]] = json.loads(cursor) if cursor else {}
        robots = await self._robots()
        allowed = lambda u: self._same_origin(u) and robots.can_fetch(USER_AGENT, u)  # noqa: E731
        if not allowed(self._config.url):
            raise SourceError(f"source {self.name!r}: robots.txt disallows {self._config.url} for {USER_AGENT}")
        start = await self.http.request("GET", self._config.url)
        kind = start.headers.get("content-type", "")
        body = start.content
        after: dict[str, dict[str, Any]] = {}
        if "xml" in kind or body.lstrip().startswith(b"<?xml") or self._config.url.endswith(".xml"):
            listed = await self._from_sitemap(body, allowed, before, after)
        else:
            listed = await self._crawl(start, allowed, before, after)
        return Listing(documents=listed, complete=True, cursor=json.dumps(after, sort_keys=True))

    async def _from_sitemap(self, body: bytes, allowed, before, after) -> list[Listed]:
        pages: list[tuple[str, str | None]] = []
        queue, seen_maps = [body], 0
        while queue and len(pages) < self._config.max_pages:
            root = _xml(queue.pop(0), self.name)
            seen_maps += 1
            for entry in root:
                loc = _child(entry, "loc")
                if not loc:
                    continue
                if entry.tag.endswith("sitemap") and seen_maps < 50 and allowed(loc):  # a sitemap index
                    queue.append((await self.http.request("GET", loc)).content)
                elif entry.tag.endswith("url") and allowed(loc):
                    pages.append((urldefrag(loc)[0], _child(entry, "lastmod")))
        listed = []
        for url, lastmod in pages[: self._config.max_pages]:
            if lastmod:
                after[url] = {"v": "lastmod:" + lastmod}
                listed.append(Listed(ref=url, version=after[url]["v"], url=url, path=urlsplit(url).path))
            else:
                item = await self._conditional(url, before, after)
                if item is not None:
                    listed.append(item)
        return listed

    async def _crawl(self, start, allowed, before, after) -> list[Listed]:
        first = urldefrag(str(start.url))[0]
        queue, seen, listed = [first], {first}, []
        prefetched = {first: start}
        while queue and len(listed) < self._config.max_pages:
            url = queue.pop(0)
            item = await self._conditional(url, before, after, prefetched.pop(url, None))
            if item is None:
                continue
            listed.append(item)
            for link in after[url].get("links", []):
                if link not in seen and allowed(link):
                    seen.add(link)
                    queue.append(link)
        return listed

    async def _conditional(self, url: str, before, after, response=None) -> Listed | None:
        """One page, fetched only if it changed since the last sync (ETag / Last-Modified)."""
        old = before.get(url, {})
        if response is None:
            headers = {k: v for k, v in (("If-None-Match", old.get("etag")), ("If-Modified-Since", old.get("lm"))) if v}
            response = await self.http.request("GET", url, headers=headers, ok=(404, 410))
        if response.status_code in (404, 410):
            return None
        if response.status_code == 304 and old:
            after[url] = old
            return Listed(ref=url, version=old["v"], url=url, path=urlsplit(url).path)
        body = response.content
        kind = response.headers.get("content-type", "").split(";")[0].strip()
        entry: dict[str, Any] = {"v": response.headers.get("etag") or response.headers.get("last-modified")
                                 or "sha256:" + hashlib.sha256(body).hexdigest()[:24]}
        for key, header in (("etag", "etag"), ("lm", "last-modified")):
            if response.headers.get(header):
                entry[key] = response.headers[header]
        if kind in ("text/html", "application/xhtml+xml") or not kind:
            entry["links"] = _links(url, body)
        after[url] = entry
        self._pages[url] = body
        return Listed(ref=url, version=entry["v"], url=url, path=urlsplit(url).path, extra={"type": kind})

    async def read(self, item: Listed) -> Fetched:
        body = self._pages.pop(item.ref, None)
        kind = item.extra.get("type", "")
        if body is None:
            response = await self.http.request("GET", item.ref)
            body, kind = response.content, response.headers.get("content-type", "").split(";")[0].strip()
        name = posixpath.basename(urlsplit(item.ref).path) or "index.html"
        suffix = posixpath.splitext(name)[1].lower()
        if suffix in DOCUMENT_SUFFIXES or (kind and "html" not in kind):
            return Fetched(filename=name, data=body, url=item.ref)
        page = posixpath.splitext(name)[0] + ".html"
        return Fetched(filename=page, data=main_content(body), url=item.ref,
                       anchors=heading_anchors(Fetched(filename=page, data=body)))


def main_content(html: bytes) -> bytes:
    """The page's main content as HTML (trafilatura), the title kept; the whole page when
    trafilatura finds nothing it trusts (a very short page)."""
    import trafilatura

    text = html.decode("utf-8", errors="replace")
    found = trafilatura.extract(text, output_format="html", include_tables=True, include_formatting=True,
                                include_links=False, include_images=False)
    if not found:
        return html
    title = trafilatura.extract_metadata(text)
    head = f"<title>{title.title}</title>" if title is not None and title.title else ""
    return f"<html><head>{head}</head>{found.split('<body>', 1)[-1].rsplit('</html>', 1)[0]}</html>".encode()


def _links(base: str, body: bytes) -> list[str]:
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, "html.parser")
    links = []
    for a in soup.find_all("a", href=True):
        href = urldefrag(urljoin(base, a["href"].strip()))[0]
        if urlsplit(href).scheme in ("http", "https"):
            links.append(href)
    return sorted(set(links))


def _xml(body: bytes, source: str) -> ElementTree.Element:
    try:
        return ElementTree.fromstring(body)
    except ElementTree.ParseError as exc:
        raise SourceError(f"source {source!r}: the sitemap is not valid XML ({exc})") from exc


def _child(entry: ElementTree.Element, name: str) -> str | None:
    for child in entry:
        if child.tag.rsplit("}", 1)[-1] == name and child.text:
            return child.text.strip()
    return None


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.source(WebsiteSource)
