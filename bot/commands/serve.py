"""`askdesk serve slack`: run the Slack bot.

Socket Mode when `SLACK_APP_TOKEN` is set (development: no public URL needed), HTTP mode
otherwise (`POST /slack/events` on `--port`/`ASKDESK_PORT`, for production behind a load
balancer). Configuration mistakes (missing or rejected tokens, unreachable Slack) end
with one clear line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
from typing import Optional

import typer

serve_app = typer.Typer(help="Run askdesk as a chat bot.", no_args_is_help=True)

log = logging.getLogger("askdesk.serve")


class StartupError(Exception):
    """A configuration problem: printed as one line, exit code 2."""


def register(app: typer.Typer) -> None:
    app.add_typer(serve_app, name="serve")


@serve_app.callback()
def _store_is_free() -> None:
    """Before any surface contacts its platform: refuse at once (one line, exit 3) when another
    process holds the embedded store."""
    from pydantic import ValidationError

    from agent.config import load_settings
    from agent.store.lock import DirectoryLock

    try:
        settings = load_settings()
    except ValidationError:
        return  # the command itself reports bad settings
    if not settings.qdrant_url:
        DirectoryLock.check_free(settings.data_dir)


def check_tokens(bot_token: str | None, app_token: str | None, signing_secret: str | None) -> str:
    """The mode ('socket' or 'http'), or StartupError naming the missing/malformed variable."""
    if not bot_token:
        raise StartupError("SLACK_BOT_TOKEN is not set: copy the Bot User OAuth Token (xoxb-…) from the app's "
                           "OAuth & Permissions page (see docs/slack.md).")
    if not bot_token.startswith("xoxb-"):
        raise StartupError("SLACK_BOT_TOKEN must be a bot token starting with xoxb-.")
    if app_token:
        if not app_token.startswith("xapp-"):
            raise StartupError("SLACK_APP_TOKEN must be an app-level token starting with xapp- "
                               "(Basic Information → App-Level Tokens, scope connections:write).")
        return "socket"
    if not signing_secret:
        raise StartupError("SLACK_SIGNING_SECRET is not set (HTTP mode): copy it from Basic Information → App "
                           "Credentials, or set SLACK_APP_TOKEN to use Socket Mode.")
    return "http"


async def verify_bot_token(client) -> dict:
    """auth.test once at start-up, so a wrong token fails now, not at the first question."""
    from slack_sdk.errors import SlackApiError

    try:
        return (await client.auth_test()).data  # type: ignore[return-value]
    except SlackApiError as exc:
        raise StartupError(f"Slack rejected SLACK_BOT_TOKEN ({exc.response.get('error')}): check the token and "
                           "that the app is installed in the workspace.") from None
    except Exception as exc:  # connection refused, DNS, TLS ...
        raise StartupError(f"cannot reach the Slack API at {client.base_url}: {type(exc).__name__}: {exc}") from None


async def start_admin_channel(settings, runtime):
    """Alongside the surfaces: the local channel `askdesk ingest` uses to hand jobs to this
    process while it holds the embedded store (bot/admin; None with a Qdrant server)."""
    from bot.admin.channel import AdminChannel

    return await AdminChannel.start(settings, runtime)


async def run_slack(settings, *, host: str, stop: asyncio.Event | None = None) -> None:
    """Start the bot and serve until `stop` is set (or SIGINT/SIGTERM)."""
    from agent.runtime import Runtime
    from agent.service import Askdesk
    from agent.store import StoreInUse
    from bot.slack.app import build_slack_app, make_client

    bot_token = os.environ.get("SLACK_BOT_TOKEN")
    app_token = os.environ.get("SLACK_APP_TOKEN")
    signing_secret = os.environ.get("SLACK_SIGNING_SECRET")
    mode = check_tokens(bot_token, app_token, signing_secret)
    identity = await verify_bot_token(make_client(settings, bot_token))

    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):
            pass

    try:
        runtime = Runtime.open(settings)
    except StoreInUse:
        raise  # one line from the CLI entry point (exit 3), like every command
    except Exception as exc:
        raise StartupError(f"cannot open the vector store ({type(exc).__name__}: {exc})") from None
    askdesk = None
    admin = None
    try:
        askdesk = Askdesk.create(settings, runtime=runtime)
        admin = await start_admin_channel(settings, runtime)
        bot = build_slack_app(settings, askdesk, runtime, token=bot_token,
                              signing_secret=signing_secret if mode == "http" else None)
        who = f"@{identity.get('user')} in {identity.get('team')}"
        if mode == "socket":
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
            from slack_sdk.errors import SlackApiError

            handler = AsyncSocketModeHandler(bot.app, app_token, web_client=make_client(settings, None))
            try:
                await handler.connect_async()
            except SlackApiError as exc:
                raise StartupError(f"Slack rejected SLACK_APP_TOKEN ({exc.response.get('error')}): create an "
                                   "app-level token with the connections:write scope.") from None
            typer.echo(f"askdesk: Slack Socket Mode connected as {who}", err=True)
            await stop.wait()
            await handler.close_async()
        else:
            try:
                runner, port = await bot.start_http(host, settings.port)
            except OSError as exc:
                raise StartupError(f"cannot listen on {host}:{settings.port} ({exc.strerror or exc}): set "
                                   "ASKDESK_PORT or --port to a free port.") from None
            typer.echo(f"askdesk: Slack HTTP mode as {who}, listening on http://{host}:{port}/slack/events", err=True)
            await stop.wait()
            await runner.cleanup()
        await bot.drain(timeout=30)
    finally:
        if admin is not None:
            await admin.close()
        if askdesk is not None:
            await askdesk.close()
        await runtime.close()


@serve_app.command("slack")
def slack(
    port: Optional[int] = typer.Option(None, help="HTTP mode port (default ASKDESK_PORT or 3000)."),
    host: str = typer.Option("0.0.0.0", help="HTTP mode bind address."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log each request."),
) -> None:
    """Serve the Slack bot: Socket Mode if SLACK_APP_TOKEN is set, else HTTP on /slack/events."""
    from pydantic import ValidationError

    from agent.config import load_settings

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = load_settings(**({"port": port} if port is not None else {}))
        asyncio.run(run_slack(settings, host=host))
    except StartupError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ()))
        typer.echo(f"error: invalid setting {where or '?'}: {first.get('msg')}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        pass
