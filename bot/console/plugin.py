"""The admin console as a surface of `askdesk serve` (bot/surface.py), registered through the
`askdesk.plugins` entry point `console`: `askdesk serve console`, or next to the chat surfaces
(`askdesk serve slack teams console`) over the same service and stores.

Its configuration is checked before anything opens (an issuer without a client id or secret,
plain http to a provider that is not on this machine) and the provider's discovery document is
read in `connect()`, so a wrong issuer is one line at start-up. At every start until someone
has used it, a new one-time bootstrap token is printed (only its hash is kept)."""

from __future__ import annotations

import asyncio
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from agent.config import Settings
from bot.console.settings import SURFACE, ConsoleSettings, secure_url
from bot.surface import Desk, Stop, Surface, SurfaceError

if TYPE_CHECKING:
    from agent.plugins import Registrar
    from bot.console.oidc import OidcClient


class ConsoleSurface(Surface):
    name = SURFACE
    settings = ConsoleSettings

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.console_settings: ConsoleSettings = self.config()
        self.oidc = oidc_client(self.console_settings)
        public = self.console_settings.public_url
        if public and not public.startswith(("https://", "http://")):
            raise SurfaceError(f"ASKDESK_CONSOLE_PUBLIC_URL must be an http(s) address, not {public!r}.")
        self.bootstrap_token: str | None = None  # printed at start while none was used (tests read it)

    async def connect(self) -> None:
        from bot.console.oidc import OidcError

        if self.oidc is None:
            return
        try:
            await self.oidc.metadata()
        except OidcError as exc:
            await self.oidc.close()
            raise SurfaceError(f"the console cannot use ASKDESK_CONSOLE_ISSUER: {exc}") from None

    async def start(self, desk: Desk) -> Stop:
        from aiohttp import web

        from bot.console.app import application
        from bot.console.state import Console
        from bot.console.reports import Window

        config = self.console_settings
        runtime = desk.askdesk.runtime
        console = Console(desk.settings, config, desk.askdesk, self.oidc, embedder=runtime.embedder)
        console.app = application(console)
        runner = web.AppRunner(console.app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, desk.host, config.port)
        try:
            await site.start()
        except OSError as exc:
            await runner.cleanup()
            await console.close()
            raise SurfaceError(f"cannot listen on {desk.host}:{config.port} ({exc.strerror or exc}): set "
                               "ASKDESK_CONSOLE_PORT to a free port.") from None
        self.port = runner.addresses[0][1] if runner.addresses else config.port
        if not config.public_url:
            console.public_url = f"http://localhost:{self.port}"
        self.app = console
        desk.say(f"admin console on {console.public_url} (listening on {desk.host}:{self.port})")
        if self.oidc is None:
            desk.say("console: ASKDESK_CONSOLE_ISSUER is not set: sign-in by the bootstrap token only")
        self.bootstrap_token = console.store.new_bootstrap()
        if self.bootstrap_token:
            desk.say(f"console bootstrap token (one use, for the first sign-in): {self.bootstrap_token}")
        # the default Overview computed now, so the first admin does not wait for it
        warm = asyncio.create_task(console.reports.get(Window.default(datetime.now(timezone.utc).date())))
        # and the learned answers' citations, counted once in full (the page then reads only new turns)
        warm_learned = asyncio.create_task(console.citations.of(desk.askdesk.learned()))

        async def stop() -> None:
            warm.cancel()
            warm_learned.cancel()
            await asyncio.gather(warm, warm_learned, return_exceptions=True)
            await runner.cleanup()
            await console.close()

        return stop

    @classmethod
    def missing_env(cls) -> list[str]:
        config = ConsoleSettings()
        if config.issuer and not config.client_id:
            return ["ASKDESK_CONSOLE_CLIENT_ID"]
        return []


def oidc_client(config: ConsoleSettings) -> "OidcClient | None":
    """The provider's client, or None without an issuer; SurfaceError for a setup that cannot work."""
    if not config.issuer:
        return None
    from bot.console.oidc import OidcClient

    if not secure_url(config.issuer):
        raise SurfaceError(f"ASKDESK_CONSOLE_ISSUER must be an https address, not {config.issuer!r}.")
    secret = config.client_secret.get_secret_value() if config.client_secret is not None else ""
    if not config.client_id or not secret:
        missing = "ASKDESK_CONSOLE_CLIENT_ID" if not config.client_id else "ASKDESK_CONSOLE_CLIENT_SECRET"
        raise SurfaceError(f"{missing} is not set: the console signs in with {config.issuer} as a registered "
                           "client (see docs/console.md).")
    return OidcClient(config.issuer, config.client_id, secret)


def register(r: "Registrar") -> None:
    r.surface(ConsoleSurface)
