"""A small intranet on an ephemeral loopback port, answering as a web server does: robots.txt,
a sitemap with and without <lastmod>, ETag / Last-Modified with 304 on a match, 404 for a
removed page, 429 with Retry-After when told to throttle. Records every request."""

from __future__ import annotations

from dataclasses import dataclass, field

from aiohttp import web

from tests.fakes.loopback import serve


@dataclass
class Page:
    body: bytes
    content_type: str = "text/html"
    etag: str | None = None
    last_modified: str | None = None


@dataclass
class FakeWebsite:
    pages: dict[str, Page] = field(default_factory=dict)  # path -> page
    robots: str = "User-agent: *\nDisallow: /private/\n"
    throttle: int = 0  # the next N requests get 429
    requests: list[tuple[str, str, dict]] = field(default_factory=list)  # (method, path, headers)
    port: int = 0

    async def start(self) -> "FakeWebsite":
        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._serve)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def html(self, path: str, title: str, body: str, *, etag: str | None = None, links: list[str] = ()) -> None:
        nav = "".join(f'<a href="{link}">{link}</a> ' for link in links)
        self.pages[path] = Page(f"<html><head><title>{title}</title></head><body><nav>{nav}</nav>"
                                f"<main><h1>{title}</h1>{body}</main><footer>Acme intranet</footer></body></html>"
                                .encode(), etag=etag)

    async def _serve(self, request: web.Request) -> web.Response:
        path = "/" + request.match_info["tail"]
        self.requests.append(("GET", path, dict(request.headers)))
        if self.throttle:
            self.throttle -= 1
            return web.Response(status=429, headers={"Retry-After": "7"}, text="Too Many Requests")
        if path == "/robots.txt":
            return web.Response(text=self.robots, content_type="text/plain")
        page = self.pages.get(path)
        if page is None:
            return web.Response(status=404, text="<h1>Not Found</h1>", content_type="text/html")
        headers = {}
        if page.etag:
            headers["ETag"] = page.etag
            if request.headers.get("If-None-Match") == page.etag:
                return web.Response(status=304, headers=headers)
        if page.last_modified:
            headers["Last-Modified"] = page.last_modified
        return web.Response(body=page.body, content_type=page.content_type, headers=headers)
