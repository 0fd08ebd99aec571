"""The console's doors, over HTTP without a browser (fast): no route answers without a session
(every route the router holds is tried, so a new page cannot forget it), sign-in through a
local OpenID provider checks state, nonce, PKCE and the ID token's signature, issuer, audience
and expiry, only ASKDESK_ADMINS get in, every POST needs its session's CSRF token, and the
bootstrap token works exactly once. The pages themselves are tested in a real browser
(tests/test_console_browser.py)."""

from __future__ import annotations

import re
import socket
from contextlib import asynccontextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import AsyncIterator

import aiohttp
import pytest
from yarl import URL

from agent.config import Settings
from agent.knowledge.learned import LearnedAnswers
from agent.state.memory import MemoryState
from bot.console.plugin import ConsoleSurface
from bot.surface import Desk, SurfaceError
from tests.fakes.oidc_provider import TAMPERS, FakeOidcProvider
from tests.test_cli_chat import data_dir, kb_data  # noqa: F401  (fixtures: a small knowledge base)

# the routes reachable without a session: adding one to this list is a decision, not an accident
PUBLIC = {("GET", "/login"), ("GET", "/login/oidc"), ("GET", "/auth/callback"), ("POST", "/login/bootstrap"),
          ("GET", "/static/{name}"), ("HEAD", "/login"), ("HEAD", "/login/oidc"), ("HEAD", "/auth/callback"),
          ("HEAD", "/static/{name}")}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class StubService:
    """What the console's handlers reach on the service, without a knowledge base."""

    def __init__(self) -> None:
        self.state = MemoryState()
        self.runtime = SimpleNamespace(embedder=lambda: None)
        self.removed: list[str] = []
        self.learned_answers = LearnedAnswers(self.runtime, Path("/nonexistent/learned"), review_days=180,  # type: ignore[arg-type]
                                              remind_days=14)

    def learned(self) -> list:
        return []

    async def remove_learned(self, name: str) -> bool:
        self.removed.append(name)
        return True


@pytest.fixture
async def provider() -> AsyncIterator[FakeOidcProvider]:
    fake = await FakeOidcProvider().start()
    yield fake
    await fake.stop()


@asynccontextmanager
async def console(tmp_path, provider: FakeOidcProvider | None = None, **extra) -> AsyncIterator[tuple]:
    """A started console surface over a stub service, and its base URL."""
    port = free_port()
    values = {"data_dir": tmp_path / "data", "admins": "U0ADMIN,Boss@Example.org", "console_port": port,
              "console_public_url": f"http://127.0.0.1:{port}", **extra}
    if provider is not None:
        values.update(console_issuer=provider.issuer, console_client_id=provider.client_id,
                      console_client_secret=provider.client_secret)
    settings = Settings(**values)
    surface = ConsoleSurface(settings)
    await surface.connect()
    service = StubService()
    stop = await surface.start(Desk(settings=settings, askdesk=service, runner=None, host="127.0.0.1"))
    try:
        yield surface, f"http://127.0.0.1:{port}", service
    finally:
        await stop()


def client() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True))


async def oidc_sign_in(http: aiohttp.ClientSession, base: str) -> aiohttp.ClientResponse:
    """Follow the sign-in by hand: console -> provider -> callback; the callback's response."""
    start = await http.get(f"{base}/login/oidc?next=/escalations", allow_redirects=False)
    assert start.status == 302, await start.text()
    back = await http.get(start.headers["Location"], allow_redirects=False)
    assert back.status == 302, await back.text()
    return await http.get(back.headers["Location"], allow_redirects=False)


def cookie_headers(response: aiohttp.ClientResponse) -> list[str]:
    return response.headers.getall("Set-Cookie", [])


async def csrf_of(http: aiohttp.ClientSession, url: str) -> str:
    page = await (await http.get(url)).text()
    return re.search(r'name="csrf" value="([^"]+)"', page)[1]


def cookie(http: aiohttp.ClientSession, base: str, name: str) -> str:
    return http.cookie_jar.filter_cookies(URL(base))[name].value


async def bootstrap_sign_in(http: aiohttp.ClientSession, base: str, token: str) -> aiohttp.ClientResponse:
    """The bootstrap form, posted with the login cookie's value as its CSRF token (the form is
    not on the page once the token was used, but the endpoint must still refuse it)."""
    await http.get(f"{base}/login")
    login_csrf = cookie(http, base, "askdesk-login")
    return await http.post(f"{base}/login/bootstrap", data={"csrf": login_csrf, "token": token, "next": "/"},
                           allow_redirects=False)


async def test_no_route_answers_without_a_session(tmp_path):
    async with console(tmp_path) as (surface, base, _):
        handlers = {(r.method, r.resource.canonical): r.handler for r in surface.app.app.router.routes()}
        routes = set(handlers)
        public = {route for route, handler in handlers.items() if getattr(handler, "__console_public__", False)}
        assert public == PUBLIC
        guarded = sorted(routes - PUBLIC)
        assert len(guarded) >= 14  # every page, action and JSON endpoint
        async with client() as http:
            http.cookie_jar.update_cookies({"askdesk-console": "forged-session"})
            for method, path in [*guarded, ("GET", "/no-such-page")]:
                if method == "HEAD":
                    continue
                url = base + path.replace("{name}", "x")
                response = await http.request(method, url, allow_redirects=False, data={"csrf": "x"})
                if path.startswith("/api/"):
                    assert response.status == 401, (method, path)
                    assert await response.json() == {"error": "not signed in"}
                else:
                    assert response.status == 303, (method, path, response.status)
                    assert response.headers["Location"].startswith("/login?next="), (method, path)


async def test_an_admin_signs_in_with_the_provider(tmp_path, provider):
    async with console(tmp_path, provider) as (surface, base, _):
        async with client() as http:
            done = await oidc_sign_in(http, base)
            assert done.status == 303 and done.headers["Location"] == "/escalations"
            session_cookie = next(c for c in cookie_headers(done) if c.startswith("askdesk-console="))
            assert "HttpOnly" in session_cookie and "SameSite=Lax" in session_cookie and "Path=/" in session_cookie
            assert "Secure" not in session_cookie  # http on loopback; https makes it Secure (below)
            page = await http.get(f"{base}/escalations", allow_redirects=False)
            assert page.status == 200 and "Dana Admin" in await page.text()
            # logging out ends the session on the server, not only in this browser
            old = cookie(http, base, "askdesk-console")
            await http.post(f"{base}/logout", data={"csrf": await csrf_of(http, f"{base}/escalations")})
        async with client() as replay:
            replay.cookie_jar.update_cookies({"askdesk-console": old})
            assert (await replay.get(f"{base}/escalations", allow_redirects=False)).status == 303
    [asked] = provider.authorize_requests
    assert asked["code_challenge_method"] == "S256" and asked["state"] and asked["nonce"]
    assert asked["redirect_uri"] == f"{base}/auth/callback" and "openid" in asked["scope"].split()
    [exchanged] = provider.token_requests
    assert exchanged["code_verifier"] and exchanged["client_secret"] == provider.client_secret


@pytest.mark.parametrize("tamper", TAMPERS)
async def test_a_bad_id_token_is_refused(tmp_path, provider, tamper):
    provider.tamper = tamper
    async with console(tmp_path, provider) as (_, base, _service):
        async with client() as http:
            done = await oidc_sign_in(http, base)
            assert done.status == 400 and "Sign-in failed" in await done.text()
            assert not any(c.startswith("askdesk-console=") and "askdesk-console=;" not in c
                           for c in cookie_headers(done))
            assert (await http.get(f"{base}/", allow_redirects=False)).status == 303


@pytest.mark.parametrize("user, admitted", [
    ({"sub": "U0OTHER", "email": "boss@example.org", "email_verified": True, "name": "Boss"}, True),  # by email
    ({"sub": "U0OTHER", "email": "BOSS@example.org", "name": "Boss"}, True),  # no email_verified claim (Entra)
    ({"sub": "U0OTHER", "email": "boss@example.org", "email_verified": False, "name": "Boss"}, False),
    ({"sub": "U0OTHER", "email": "eve@example.org", "email_verified": True, "name": "Eve"}, False),
])
async def test_only_admins_are_let_in(tmp_path, provider, user, admitted):
    provider.user = user
    async with console(tmp_path, provider) as (_, base, _service):
        async with client() as http:
            done = await oidc_sign_in(http, base)
            if admitted:
                assert done.status == 303
                assert (await http.get(f"{base}/learned", allow_redirects=False)).status == 200
            else:
                assert done.status == 403 and "Not an admin" in await done.text()
                assert (await http.get(f"{base}/learned", allow_redirects=False)).status == 303


async def test_a_callback_must_come_back_to_the_browser_that_started_it(tmp_path, provider):
    async with console(tmp_path, provider) as (_, base, _service):
        async with client() as alice, client() as mallory:
            start = await alice.get(f"{base}/login/oidc", allow_redirects=False)
            back = await alice.get(start.headers["Location"], allow_redirects=False)
            callback = back.headers["Location"]
            stolen = await mallory.get(callback, allow_redirects=False)  # no login cookie of this sign-in
            assert stolen.status == 400 and "another browser" in await stolen.text()
            again = await alice.get(callback, allow_redirects=False)  # the state was spent by the first try
            assert again.status == 400
        provider.deny = True
        async with client() as http:
            denied = await oidc_sign_in(http, base)
            assert denied.status == 400 and "(access_denied)" in await denied.text()


async def test_every_post_needs_its_session_csrf_token(tmp_path):
    async with console(tmp_path) as (surface, base, service):
        async with client() as http:
            assert (await bootstrap_sign_in(http, base, surface.bootstrap_token)).status == 303
            token = await csrf_of(http, f"{base}/learned")
            for forged in ({"csrf": "forged"}, {}, {"csrf": ""}):
                response = await http.post(f"{base}/learned/remove", data={"name": "a.md", **forged},
                                           allow_redirects=False)
                assert response.status == 403, forged
            other_site = await http.post(f"{base}/learned/remove", data={"name": "a.md", "csrf": token},
                                         headers={"Origin": "https://evil.example"}, allow_redirects=False)
            assert other_site.status == 403
            assert service.removed == []
            ok = await http.post(f"{base}/learned/remove", data={"name": "a.md", "csrf": token}, allow_redirects=False)
            assert ok.status == 303 and service.removed == ["a.md"]
            by_header = await http.post(f"{base}/learned/remove", data={"name": "b.md"},
                                        headers={"X-CSRF-Token": token}, allow_redirects=False)
            assert by_header.status == 303 and service.removed == ["a.md", "b.md"]
        async with client() as http:  # the sign-in form's own token: its login cookie's value
            await http.get(f"{base}/login")
            forged = await http.post(f"{base}/login/bootstrap", data={"csrf": "forged", "token": "x"},
                                     allow_redirects=False)
            assert forged.status == 403 and "did not come from the console" in await forged.text()


async def test_the_bootstrap_token_works_once(tmp_path):
    async with console(tmp_path) as (surface, base, _):
        token = surface.bootstrap_token
        assert token and len(token) >= 40
        stored = (tmp_path / "data" / "console.sqlite").read_bytes()
        assert token.encode() not in stored  # only its hash is kept
        async with client() as http:
            assert "bootstrap" in await (await http.get(f"{base}/login")).text()
            wrong = await bootstrap_sign_in(http, base, "not-the-token")
            assert wrong.status == 403 and "not valid or was already used" in await wrong.text()
            first = await bootstrap_sign_in(http, base, token)
            assert first.status == 303
            assert (await http.get(f"{base}/sources", allow_redirects=False)).status == 200
        async with client() as http:
            second = await bootstrap_sign_in(http, base, token)
            assert second.status == 403
    async with console(tmp_path) as (surface, base, _):  # the next start prints no new token
        assert surface.bootstrap_token is None
        async with client() as http:
            assert 'id="bootstrap"' not in await (await http.get(f"{base}/login")).text()


async def test_an_unused_bootstrap_token_is_replaced_at_the_next_start(tmp_path):
    async with console(tmp_path) as (surface, _, _service):
        first = surface.bootstrap_token
    async with console(tmp_path) as (surface, base, _service):
        assert surface.bootstrap_token and surface.bootstrap_token != first
        async with client() as http:
            assert (await bootstrap_sign_in(http, base, first)).status == 403
            assert (await bootstrap_sign_in(http, base, surface.bootstrap_token)).status == 303


async def test_https_cookies_are_secure_host_only_and_headers_lock_the_page_down(tmp_path):
    async with console(tmp_path, console_public_url="https://console.example.org") as (_, base, _service):
        async with client() as http:
            login = await http.get(f"{base}/login")
            [cookie] = cookie_headers(login)
            assert cookie.startswith("__Host-askdesk-login=") and "Secure" in cookie and "HttpOnly" in cookie
            assert "SameSite=Lax" in cookie and "Domain" not in cookie
            headers = login.headers
            assert "script-src 'self'" in headers["Content-Security-Policy"] and "unsafe-inline" not in \
                headers["Content-Security-Policy"]
            assert headers["X-Frame-Options"] == "DENY" and headers["Referrer-Policy"] == "same-origin"
            assert headers["Cache-Control"] == "no-store" and headers["X-Content-Type-Options"] == "nosniff"


async def test_a_next_target_never_leaves_the_console(tmp_path):
    async with console(tmp_path) as (surface, base, _):
        async with client() as http:
            await http.get(f"{base}/login")
            login_csrf = cookie(http, base, "askdesk-login")
            response = await http.post(f"{base}/login/bootstrap", allow_redirects=False, data={
                "csrf": login_csrf, "token": surface.bootstrap_token, "next": "//evil.example/x"})
            assert response.status == 303 and response.headers["Location"] == "/"


@pytest.mark.parametrize("extra, message", [
    ({"console_issuer": "http://idp.example.org"}, "must be an https address"),
    ({"console_issuer": "https://slack.com"}, "ASKDESK_CONSOLE_CLIENT_ID is not set"),
    ({"console_issuer": "https://slack.com", "console_client_id": "1.2"}, "ASKDESK_CONSOLE_CLIENT_SECRET is not set"),
    ({"console_public_url": "console.example.org"}, "must be an http(s) address"),
])
def test_a_setup_that_cannot_work_fails_at_start(tmp_path, extra, message):
    with pytest.raises(SurfaceError, match=re.escape(message)):
        ConsoleSurface(Settings(data_dir=tmp_path, **extra))


async def test_a_wrong_issuer_fails_at_start_in_one_line(tmp_path, provider):
    surface = ConsoleSurface(Settings(data_dir=tmp_path, console_issuer=f"{provider.issuer}/other",
                                      console_client_id="c", console_client_secret="s"))
    with pytest.raises(SurfaceError, match="cannot use ASKDESK_CONSOLE_ISSUER: .*HTTP 404"):
        await surface.connect()
    port = free_port()
    surface = ConsoleSurface(Settings(data_dir=tmp_path, console_issuer=f"http://127.0.0.1:{port}",
                                      console_client_id="c", console_client_secret="s"))
    with pytest.raises(SurfaceError, match="cannot reach"):
        await surface.connect()


def test_the_pkce_challenge_is_rfc_7636s():
    from bot.console.oidc import pkce_challenge

    # RFC 7636, appendix B
    assert pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk") == "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"


def test_a_one_shot_ask_loads_none_of_the_console(data_dir):  # noqa: F811
    """Plug-in discovery imports the console's registration module (like every surface's), but a
    one-shot `askdesk ask` loads nothing of the console itself: no web server, templates or JWT."""
    import json
    import subprocess
    import sys

    from tests.test_cli_imports import CHILD, QUESTION, child_env

    watched = ["bot.console.app", "bot.console.oidc", "bot.console.guard", "bot.console.playground", "jwt",
               "aiohttp", "playwright"]
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(["ask", QUESTION, "--json"]), json.dumps(watched)],
                          capture_output=True, text=True, timeout=120,
                          env=child_env(ASKDESK_DATA_DIR=str(data_dir)))
    report = json.loads(next(line for line in proc.stderr.splitlines()
                             if line.startswith("MODULES ")).removeprefix("MODULES "))
    assert report == {"code": 0, "loaded": []}, proc.stderr[-2000:]
