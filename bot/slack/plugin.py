"""Slack as a surface of `askdesk serve` (bot/surface.py), registered through the
`askdesk.plugins` entry point `slack`.

Socket Mode when `SLACK_APP_TOKEN` is set (development: no public URL needed), HTTP mode
otherwise (`POST /slack/events` on `--port`/`ASKDESK_PORT`). The tokens are checked before
anything opens and the bot token once against Slack (auth.test) before the stores open, so a
wrong one is one line at start-up, not a failure at the first question. Slack's SDKs are
imported only when the surface starts.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from agent.config import Settings
from bot.escalation import Target
from bot.slack.settings import SURFACE, SlackSettings
from bot.surface import Desk, Stop, Surface, SurfaceError

if TYPE_CHECKING:
    from agent.plugins import Registrar

# a channel id (C…, G…, D…) or a channel's name (#help): what chat.postMessage takes
_CHANNEL = re.compile(r"[CGD][A-Z0-9]{2,}|#[\w.-]+")


def check_tokens(bot_token: str | None, app_token: str | None, signing_secret: str | None) -> str:
    """The mode ('socket' or 'http'), or SurfaceError naming the missing/malformed variable."""
    if not bot_token:
        raise SurfaceError("SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from the app's "
                           "OAuth & Permissions page (see docs/slack.md).")
    if not bot_token.startswith("xoxb-"):
        raise SurfaceError("SLACK_BOT_TOKEN must be a bot token starting with xoxb-.")
    if app_token:
        if not app_token.startswith("xapp-"):
            raise SurfaceError("SLACK_APP_TOKEN must be an app-level token starting with xapp- "
                               "(Basic Information → App-Level Tokens, scope connections:write).")
        return "socket"
    if not signing_secret:
        raise SurfaceError("SLACK_SIGNING_SECRET is not set (HTTP mode): copy it from Basic Information → App "
                           "Credentials, or set SLACK_APP_TOKEN to use Socket Mode.")
    return "http"


async def verify_bot_token(client: Any) -> dict:
    """auth.test once at start-up, so a wrong token fails now, not at the first question."""
    from slack_sdk.errors import SlackApiError

    try:
        return (await client.auth_test()).data  # type: ignore[no-any-return]
    except SlackApiError as exc:
        raise SurfaceError(f"Slack rejected SLACK_BOT_TOKEN ({exc.response.get('error')}): check the token and "
                           "that the app is installed in the workspace.") from None
    except Exception as exc:  # connection refused, DNS, TLS ...
        raise SurfaceError(f"cannot reach the Slack API at {client.base_url}: {type(exc).__name__}: {exc}") from None


async def close_streams_left_open(bot: Any) -> None:
    """Answers that a process killed mid-answer left streaming ("Thinking…" for good) are closed
    with a note to ask again (bot/slack/reply.py: OpenStreams); never raises."""
    from agent.prompts import speaking
    from bot.note_language import spoken

    answering = bot.services.answering
    prompts = answering.askdesk.prompts

    def note(lang: str | None) -> str:
        """Said in the language the stream's answer spoke (recorded with it; an older record: English)."""
        with speaking(spoken(prompts, lang)):
            return prompts.render("shutdown_interrupted")

    await answering.streams.close_abandoned(bot.app.client, note)


class SlackSurface(Surface):
    name = SURFACE
    settings = SlackSettings

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        self.slack: SlackSettings = self.config()
        self.bot_token = self.slack.secret("bot_token")
        self.app_token = self.slack.secret("app_token")
        self.signing_secret = self.slack.secret("signing_secret")
        self.mode = check_tokens(self.bot_token, self.app_token, self.signing_secret)
        self.identity: dict = {}

    async def connect(self) -> None:
        from bot.slack.app import make_client

        self.identity = await verify_bot_token(make_client(self.slack, self.bot_token))

    async def start(self, desk: Desk) -> Stop:
        from bot.slack.app import build_slack_app, make_client

        settings = desk.settings
        bot = build_slack_app(settings, desk.askdesk, token=self.bot_token, runner=desk.runner,
                              signing_secret=self.signing_secret if self.mode == "http" else None)
        self.app = bot
        await close_streams_left_open(bot)
        who = f"@{self.identity.get('user')} in {self.identity.get('team')}"
        if self.mode == "socket":
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
            from slack_sdk.errors import SlackApiError

            handler = AsyncSocketModeHandler(bot.app, self.app_token, web_client=make_client(self.slack, None))
            try:
                await handler.connect_async()
            except SlackApiError as exc:
                raise SurfaceError(f"Slack rejected SLACK_APP_TOKEN ({exc.response.get('error')}): create an "
                                   "app-level token with the connections:write scope.") from None
            desk.say(f"Slack Socket Mode connected as {who}")

            async def stop_socket() -> None:
                await handler.close_async()
                await bot.drain(timeout=30, cancel=True)  # SIGTERM: in-flight answers get 30 s

            return stop_socket
        try:
            runner, self.port = await bot.start_http(desk.host, settings.port)
        except OSError as exc:
            raise SurfaceError(f"cannot listen on {desk.host}:{settings.port} ({exc.strerror or exc}): set "
                               "ASKDESK_PORT or --port to a free port.") from None
        desk.say(f"Slack HTTP mode as {who}, listening on http://{desk.host}:{self.port}/slack/events")

        async def stop_http() -> None:
            await runner.cleanup()
            await bot.drain(timeout=30, cancel=True)  # SIGTERM: in-flight answers get 30 s

        return stop_http

    def review_notifier(self) -> Any:
        """Learned answers' owners on Slack get a DM (bot/slack/learned_review.py)."""
        from bot.slack.learned_review import notifier

        return notifier(self.app.app.client, self.app.services.runner.prompts) if self.app is not None else None

    @classmethod
    def target(cls, ref: str) -> Target | None:
        return Target(cls.name, ref) if _CHANNEL.fullmatch(ref) else None

    @classmethod
    def missing_env(cls) -> list[str]:
        try:
            config = SlackSettings()
        except ValueError:  # a value that does not parse: `askdesk serve slack` names it
            return []
        return [] if config.secret("bot_token") else ["SLACK_BOT_TOKEN"]


def register(r: "Registrar") -> None:
    r.surface(SlackSurface)
