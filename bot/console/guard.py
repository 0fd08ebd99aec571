"""What every console request goes through, so that no page can forget it:

- **default deny**: a route needs a session unless its handler is marked `@public` (the sign-in
  pages and static files); without one a page redirects to /login, anything under /api/ gets
  401 JSON, and an unknown path redirects too (no probing which routes exist);
- **CSRF**: every POST carries a token (form field `csrf` or header `X-CSRF-Token`) equal to
  its session's, compared in constant time; the sign-in form, before any session, carries the
  value of its login cookie (double submit); a POST whose `Origin` is another site's is refused;
- **headers**: a Content-Security-Policy that allows only our own scripts and styles (no inline
  script can run even if some text escaped), no framing, no referrer to other sites (the callback
  URL carries the sign-in code), `no-store` for everything but static files, and `Server-Timing` (the
  benchmark reads the server's own time from it).
"""

from __future__ import annotations

import hmac
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable
from urllib.parse import urlencode, urlsplit

from aiohttp import web

from bot.console.shared import SESSION, STARTED

if TYPE_CHECKING:
    from bot.console.state import Console

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
PUBLIC = "__console_public__"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
CSRF_FIELD = "csrf"
CSRF_HEADER = "X-CSRF-Token"
CSP = ("default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; object-src 'none'; "
       "base-uri 'none'; frame-ancestors 'none'; form-action 'self'")


def public(handler: Handler) -> Handler:
    """Reachable without a session (sign-in pages, static files): the exception, named."""
    setattr(handler, PUBLIC, True)
    return handler


def is_public(request: web.Request) -> bool:
    handler = getattr(request.match_info.route, "handler", None)
    return bool(getattr(handler, PUBLIC, False))


def is_api(request: web.Request) -> bool:
    return request.path.startswith("/api/")


def same_origin(request: web.Request, public_url: str) -> bool:
    """No `Origin` (older browsers, scripts with a token) or ours: the public URL's or the Host's."""
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    ours = {f"{request.scheme}://{request.host}"}
    parts = urlsplit(public_url)
    ours.add(f"{parts.scheme}://{parts.netloc}")
    return origin in ours


async def presented_token(request: web.Request) -> str:
    token = request.headers.get(CSRF_HEADER)
    if token is None and request.content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        value = (await request.post()).get(CSRF_FIELD)
        token = value if isinstance(value, str) else None
    return token or ""


def refused(request: web.Request, status: int, message: str) -> web.Response:
    if is_api(request):
        return web.json_response({"error": message}, status=status)
    return web.Response(status=status, content_type="text/html",
                        text=f"<!DOCTYPE html><title>askdesk console</title><p>{message}</p>"
                             "<p><a href='/'>Back to the console</a></p>")


def middlewares(console: "Console") -> list[Any]:
    @web.middleware
    async def timed(request: web.Request, handler: Handler) -> web.StreamResponse:
        request[STARTED] = time.perf_counter()
        return await handler(request)

    @web.middleware
    async def guarded(request: web.Request, handler: Handler) -> web.StreamResponse:
        session = console.store.session(request.cookies.get(console.cookie))
        request[SESSION] = session
        if session is None and not is_public(request):
            if is_api(request):
                return refused(request, 401, "not signed in")
            target = request.path_qs if request.method in SAFE_METHODS else "/"
            raise web.HTTPSeeOther("/login?" + urlencode({"next": target}))
        if request.method not in SAFE_METHODS:
            # the sign-in form has no session yet: its token is its login cookie's value (double submit)
            expected = request.cookies.get(console.login_cookie, "") if is_public(request) or session is None \
                else session.csrf
            token = await presented_token(request)
            if not (expected and token and hmac.compare_digest(token.encode(), expected.encode())) \
                    or not same_origin(request, console.public_url):
                return refused(request, 403, "This form has expired or did not come from the console: reload the "
                                             "page and try again.")
        return await handler(request)

    return [timed, guarded]


async def add_headers(request: web.Request, response: web.StreamResponse) -> None:
    """`on_response_prepare`: every response, errors and redirects included."""
    headers = response.headers
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("X-Frame-Options", "DENY")
    headers.setdefault("X-Content-Type-Options", "nosniff")
    # same-origin: no referrer leaves the console (the callback URL carries the sign-in code), and
    # browsers keep sending a real Origin on our own POSTs (with no-referrer Chromium sends "null")
    headers.setdefault("Referrer-Policy", "same-origin")
    headers.setdefault("Cross-Origin-Opener-Policy", "same-origin")
    if not request.path.startswith("/static/"):
        headers["Cache-Control"] = "no-store"
    started = request.get(STARTED)
    if started is not None:
        headers["Server-Timing"] = f"app;dur={(time.perf_counter() - started) * 1000:.1f}"
