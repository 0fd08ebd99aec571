"""The console's shared state: settings, the service, its stores and caches (the handlers are
handed it through the request; bot/console/app.py builds the application around it)."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable

from aiohttp import web
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from agent.config import Settings
from bot.console.keys import SESSION
from bot.console.learned_citations import LearnedCitations
from bot.console.oidc import OidcClient, Pending
from bot.console.reports import Reports
from bot.console.sessions import ConsoleStore, Session
from bot.console.settings import ConsoleSettings
from bot.console.syncs import SyncJobs

log = logging.getLogger("askdesk.console")

NAV = (("/", "Overview"), ("/sources", "Sources"), ("/gaps", "Gaps"), ("/learned", "Learned answers"),
       ("/escalations", "Escalations"), ("/revisit", "Revisit"), ("/playground", "Playground"))
PENDING_S = 600.0  # a sign-in must come back from the provider within ten minutes
MAX_PENDING = 1000
MAX_FLASHED = 1000  # sessions with a note waiting to be shown


def when(value: Any) -> str:
    """A timestamp (epoch seconds or datetime) as UTC minutes; "–" for none."""
    if value is None or value == "":
        return "–"
    if isinstance(value, (int, float)):
        value = datetime.fromtimestamp(value, timezone.utc)
    return value.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


class Console:
    """Everything the console's handlers share: settings, the service, its stores and caches."""

    def __init__(self, settings: Settings, config: ConsoleSettings, askdesk: Any, oidc: OidcClient | None,
                 *, embedder: Callable[[], Any] | None = None) -> None:
        self.settings = settings
        self.config = config
        self.askdesk = askdesk
        self.oidc = oidc
        self.public_url = (config.public_url or f"http://localhost:{config.port}").rstrip("/")
        self.store = ConsoleStore(settings.data_dir / "console.sqlite")
        self.reports = Reports(askdesk.state, embedder, config.report_fresh_s)
        self.syncs = SyncJobs(askdesk.runtime)
        self.citations = LearnedCitations(askdesk.state)  # the Learned answers page's counts, read incrementally
        self.pending: dict[str, Pending] = {}  # sign-ins waiting for the provider's callback, by state
        self.flashes: dict[str, list[tuple[str, str]]] = {}  # session id -> (kind, text) to show once
        self.templates = Environment(loader=PackageLoader("bot.console", "templates"),
                                     autoescape=select_autoescape(["html"]), undefined=StrictUndefined)
        self.templates.filters.update(when=when, percent=percent)
        self.app: web.Application | None = None  # bot/console/app.py: application(console)

    # --- cookies: __Host- names over https (no Domain, Path=/, Secure: no subdomain can set them)
    @property
    def secure(self) -> bool:
        return self.public_url.startswith("https://")

    @property
    def cookie(self) -> str:
        return "__Host-askdesk-console" if self.secure else "askdesk-console"

    @property
    def login_cookie(self) -> str:
        return "__Host-askdesk-login" if self.secure else "askdesk-login"

    def set_cookie(self, response: web.StreamResponse, name: str, value: str, max_age: int) -> None:
        response.set_cookie(name, value, max_age=max_age, path="/", httponly=True, samesite="Lax", secure=self.secure)

    @property
    def redirect_uri(self) -> str:
        return f"{self.public_url}/auth/callback"

    def admins(self) -> set[str]:
        """ASKDESK_ADMINS: user ids as they are, emails lower-case."""
        entries = (e.strip() for e in (self.settings.admins or "").split(","))
        return {e.lower() if "@" in e else e for e in entries if e}

    def add_pending(self, pending: Pending) -> None:
        """Keep a sign-in until its callback; anyone may start one, so they are bounded."""
        self._prune()
        while len(self.pending) >= MAX_PENDING:
            del self.pending[next(iter(self.pending))]  # the oldest
        self.pending[pending.state] = pending

    def take_pending(self, state: str) -> Pending | None:
        self._prune()
        return self.pending.pop(state, None)

    def _prune(self) -> None:
        now = time.time()
        for key in [k for k, p in self.pending.items() if now - p.created > PENDING_S]:
            del self.pending[key]

    # --- pages ----------------------------------------------------------------------------
    def flash(self, session: Session, kind: str, text: str) -> None:
        """A note shown once on the session's next page (what an action did)."""
        if session.id not in self.flashes and len(self.flashes) >= MAX_FLASHED:
            del self.flashes[next(iter(self.flashes))]
        self.flashes.setdefault(session.id, []).append((kind, text))

    def render(self, request: web.Request, template: str, *, status: int = 200, **context: Any) -> web.Response:
        session: Session | None = request.get(SESSION)
        flashes = self.flashes.pop(session.id, []) if session is not None else []
        html = self.templates.get_template(template).render(
            session=session, csrf=session.csrf if session is not None else "", nav=NAV, path=request.path,
            flashes=flashes, **context)
        return web.Response(text=html, status=status, content_type="text/html")

    async def close(self) -> None:
        await self.syncs.close()
        await self.reports.close()
        if self.oidc is not None:
            await self.oidc.close()
        self.store.close()
