"""Signing in and out: OpenID Connect (bot/console/oidc.py) for everyday use, and the one-time
bootstrap token for the very first sign-in. Only a person ASKDESK_ADMINS lists gets a session.

A login cookie (random, HttpOnly, SameSite=Lax, 15 minutes) ties a sign-in to the browser that
started it: the provider's callback must come back to that browser (state), and the bootstrap
form's CSRF token is that cookie's value (double submit)."""

from __future__ import annotations

import logging
import re
import secrets

from aiohttp import web

from bot.console.guard import public
from bot.console.oidc import OidcError
from bot.console.sessions import Admin
from bot.console.shared import LOGIN, console_of, redirect, session_of, signed_in_session

log = logging.getLogger("askdesk.console")

LOGIN_COOKIE_S = 900
BOOTSTRAP = "bootstrap"


def safe_next(target: str | None) -> str:
    """Where to go after signing in: a path of this console only (no open redirect)."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target \
            or target.startswith("/login") or target.startswith("/auth/"):
        return "/"
    return target


def login_binding(request: web.Request, response: web.StreamResponse) -> str:
    """The browser's login cookie, set now when it has none."""
    console = console_of(request)
    value = request.get(LOGIN) or request.cookies.get(console.login_cookie)
    if not value:
        value = secrets.token_urlsafe(24)
    request[LOGIN] = value
    console.set_cookie(response, console.login_cookie, value, LOGIN_COOKIE_S)
    return value


def login_page(request: web.Request, *, error: str | None = None, status: int = 200) -> web.Response:
    console = console_of(request)
    response = web.Response(status=status, content_type="text/html")
    binding = login_binding(request, response)
    response.text = console.templates.get_template("login.html").render(
        provider=console.oidc.name if console.oidc is not None else None,
        bootstrap=console.store.pending_bootstrap(), login_csrf=binding, error=error,
        next=safe_next(request.query.get("next")), session=None, nav=(), path=request.path, flashes=[], csrf="")
    return response


def signed_in(request: web.Request, admin: Admin, target: str) -> web.StreamResponse:
    console = console_of(request)
    token, _ = console.store.open_session(admin, console.config.session_hours)
    response = redirect(safe_next(target))
    console.set_cookie(response, console.cookie, token, int(console.config.session_hours * 3600))
    console.set_cookie(response, console.login_cookie, "", 0)
    log.info("console: %s signed in (%s)", admin.subject, admin.via)
    return response


@public
async def login(request: web.Request) -> web.StreamResponse:
    if session_of(request) is not None:
        return redirect(safe_next(request.query.get("next")))
    return login_page(request)


@public
async def start_oidc(request: web.Request) -> web.StreamResponse:
    """Off to the provider, with state, nonce and the PKCE challenge kept here."""
    console = console_of(request)
    if console.oidc is None:
        raise web.HTTPNotFound()
    response = redirect("/", 302)
    pending = console.oidc.start(login_binding(request, response), safe_next(request.query.get("next")))
    try:
        response.headers["Location"] = await console.oidc.authorization_url(pending, console.redirect_uri)
    except OidcError as exc:
        log.warning("console: sign-in cannot start: %s", exc)
        return login_page(request, error=f"Sign-in is not available: {exc}.", status=502)
    console.add_pending(pending)
    return response


@public
async def callback(request: web.Request) -> web.StreamResponse:
    """The provider sends the browser back here with a code: exchange it, check the ID token, and
    open a session for an admin."""
    console = console_of(request)
    if console.oidc is None:
        raise web.HTTPNotFound()
    pending = console.take_pending(request.query.get("state", ""))
    binding = request.cookies.get(console.login_cookie, "")
    if pending is None or not secrets.compare_digest(pending.binding.encode(), binding.encode()):
        return login_page(request, error="That sign-in expired or was started in another browser: sign in again.",
                          status=400)
    error = request.query.get("error")
    if error:
        code = error if re.fullmatch(r"[a-z_]{1,40}", error) else "error"
        return login_page(request, error=f"The provider did not sign you in ({code}).", status=400)
    try:
        id_token = await console.oidc.exchange(request.query.get("code", ""), pending, console.redirect_uri)
        claims = await console.oidc.verify(id_token, pending)
    except OidcError as exc:
        log.warning("console: sign-in refused: %s", exc)
        return login_page(request, error=f"Sign-in failed: {exc}.", status=400)
    admins = console.admins()
    matched = next((key for key in claims.keys() if key in admins), None)
    if matched is None:
        log.warning("console: %s signed in but is not in ASKDESK_ADMINS", claims.sub)
        return console.render(request, "denied.html", status=403, who=claims.shown(), keys=claims.keys())
    return signed_in(request, Admin(subject=matched, name=claims.shown(), via=console.oidc.issuer), pending.next)


@public
async def bootstrap(request: web.Request) -> web.StreamResponse:
    """The one-time token printed at the first start (CSRF checked by the guard)."""
    console = console_of(request)
    token = (await request.post()).get("token")
    if not isinstance(token, str) or not console.store.use_bootstrap(token.strip()):
        return login_page(request, error="That bootstrap token is not valid or was already used.", status=403)
    log.warning("console: the bootstrap token was used; it cannot be used again")
    return signed_in(request, Admin(subject=BOOTSTRAP, name="bootstrap token", via=BOOTSTRAP),
                     str((await request.post()).get("next") or "/"))


async def logout(request: web.Request) -> web.StreamResponse:
    console = console_of(request)
    session = signed_in_session(request)
    console.store.end_session(session.id)
    response = redirect("/login")
    console.set_cookie(response, console.cookie, "", 0)
    return response


def add_routes(router: web.UrlDispatcher) -> None:
    router.add_get("/login", login)
    router.add_get("/login/oidc", start_oidc)
    router.add_get("/auth/callback", callback)
    router.add_post("/login/bootstrap", bootstrap)
    router.add_post("/logout", logout)
