"""`askdesk serve slack|teams|slack teams`: run the chat bots, in ONE process over one Askdesk.

The embedded stores admit one process per data dir, so both surfaces are served by the
same process (`askdesk serve slack teams`), and a second `askdesk serve` on the same data
dir stops at once with one line naming the holder (agent/store/lock.py, exit code 3),
before it contacts Slack or Teams. `askdesk ingest` hands its jobs to the running server
through the local admin channel (bot/admin).

Slack: Socket Mode when `SLACK_APP_TOKEN` is set (development: no public URL needed), HTTP
mode otherwise (`POST /slack/events` on `--port`/`ASKDESK_PORT`). Teams: the Teams SDK's
`POST /api/messages` on `--teams-port`/`ASKDESK_TEAMS_PORT` (CLIENT_ID/CLIENT_SECRET/
TENANT_ID, or ASKDESK_TEAMS_DEV_MODE=true locally). Configuration mistakes (missing or
rejected credentials, a busy port or data dir) end with one clear line on stderr and exit
code 2, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional

import typer

log = logging.getLogger("askdesk.serve")

SURFACES = ("slack", "teams")


class StartupError(Exception):
    """A configuration problem: printed as one line, exit code 2."""


def register(app: typer.Typer) -> None:
    app.command("serve", no_args_is_help=True)(serve)


# --- Slack ------------------------------------------------------------------------------------


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


@dataclass
class SlackConfig:
    bot_token: str
    app_token: str | None
    signing_secret: str | None
    mode: str
    identity: dict = field(default_factory=dict)


def slack_config() -> SlackConfig:
    bot_token = os.environ.get("SLACK_BOT_TOKEN")
    app_token = os.environ.get("SLACK_APP_TOKEN")
    signing_secret = os.environ.get("SLACK_SIGNING_SECRET")
    mode = check_tokens(bot_token, app_token, signing_secret)
    return SlackConfig(bot_token or "", app_token, signing_secret, mode)


async def start_slack(settings, askdesk, runner, config: SlackConfig, host: str):
    """The running Slack bot and a coroutine function that stops it."""
    from bot.slack.app import build_slack_app, make_client

    bot = build_slack_app(settings, askdesk, token=config.bot_token, runner=runner,
                          signing_secret=config.signing_secret if config.mode == "http" else None)
    who = f"@{config.identity.get('user')} in {config.identity.get('team')}"
    if config.mode == "socket":
        from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
        from slack_sdk.errors import SlackApiError

        handler = AsyncSocketModeHandler(bot.app, config.app_token, web_client=make_client(settings, None))
        try:
            await handler.connect_async()
        except SlackApiError as exc:
            raise StartupError(f"Slack rejected SLACK_APP_TOKEN ({exc.response.get('error')}): create an "
                               "app-level token with the connections:write scope.") from None
        typer.echo(f"askdesk: Slack Socket Mode connected as {who}", err=True)

        async def stop_socket() -> None:
            await handler.close_async()
            await bot.drain(timeout=30, cancel=True)  # SIGTERM: in-flight answers get 30 s

        return bot, stop_socket, None
    try:
        runner, port = await bot.start_http(host, settings.port)
    except OSError as exc:
        raise StartupError(f"cannot listen on {host}:{settings.port} ({exc.strerror or exc}): set "
                           "ASKDESK_PORT or --port to a free port.") from None
    typer.echo(f"askdesk: Slack HTTP mode as {who}, listening on http://{host}:{port}/slack/events", err=True)

    async def stop_http() -> None:
        await runner.cleanup()
        await bot.drain(timeout=30, cancel=True)  # SIGTERM: in-flight answers get 30 s

    return bot, stop_http, port


# --- one process, every surface -------------------------------------------------------------


async def start_admin_channel(settings, runtime):
    """Alongside the surfaces: the local channel `askdesk ingest` uses to hand jobs to this
    process while it holds the embedded store (bot/admin; None with a Qdrant server)."""
    from bot.admin.channel import AdminChannel

    return await AdminChannel.start(settings, runtime)


async def open_state_store(settings):
    """The state store, connected and migrated (agent/state): StartupError when it cannot be."""
    from agent.state import StateUnavailable, open_state

    state = open_state(settings)
    try:
        await state.open()
    except StateUnavailable as exc:
        raise StartupError(f"{exc}: check ASKDESK_DATABASE_URL and that the database is running.") from None
    except Exception as exc:
        raise StartupError(f"cannot prepare the {state.backend} state store ({type(exc).__name__}: "
                           f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    return state


@dataclass
class Served:
    """What `run_serve` started (tests and benchmarks reach the bots through `on_ready`)."""

    askdesk: Any
    slack: Any = None
    teams: Any = None
    slack_port: int | None = None
    teams_port: int | None = None


def parse_surfaces(names: list[str]) -> list[str]:
    chosen: list[str] = []
    for name in names:
        key = name.strip().lower()
        if key not in SURFACES:
            raise StartupError(f"unknown surface {name!r}: choose slack, teams or both (askdesk serve slack teams).")
        if key not in chosen:
            chosen.append(key)
    if not chosen:
        raise StartupError("name the surface(s) to serve: askdesk serve slack | teams | slack teams.")
    return chosen


async def run_serve(settings, surfaces: list[str], *, host: str, stop: asyncio.Event | None = None,
                    on_ready: Callable[[Served], Any] | None = None) -> None:
    """Start the surfaces over one Askdesk and serve until `stop` is set (or SIGINT/SIGTERM)."""
    from agent.runtime import Runtime
    from bot.turn import TurnRunner
    from agent.turn.service import Askdesk
    from agent.store import StoreInUse
    from agent.store.lock import DirectoryLock

    surfaces = parse_surfaces(surfaces)
    # every configuration check first: nothing is opened for a setup that cannot start
    slack = slack_config() if "slack" in surfaces else None
    teams_auth = None
    if "teams" in surfaces:
        from bot.teams.credentials import DEV_MODE_WARNING, TeamsConfigError, teams_auth as read_auth

        try:
            teams_auth = read_auth(settings)
        except TeamsConfigError as exc:
            raise StartupError(str(exc)) from None
        if teams_auth.dev_mode:
            typer.echo(DEV_MODE_WARNING, err=True)
    if not settings.qdrant_url:
        DirectoryLock.check_free(settings.data_dir)  # StoreInUse: one line (exit 3) before any platform call

    running: list[Callable[[], Any]] = []
    askdesk = runtime = admin = None
    state = await open_state_store(settings)  # a database that is down stops the start here
    try:
        if slack is not None:
            from bot.slack.app import make_client

            slack.identity = await verify_bot_token(make_client(settings, slack.bot_token))
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
        try:
            runtime.embedder()  # load the embedding model now, not inside the first question's turn
        except Exception as exc:  # the first question reports it properly
            log.warning("embedder not loaded at start-up: %s", type(exc).__name__)
        askdesk = Askdesk.create(settings, runtime=runtime, state=state)
        askdesk.starting()  # /healthz says "starting" until the warm-up below has run
        runner = TurnRunner(askdesk)  # one rate limit, one set of answer records, for every surface
        admin = await start_admin_channel(settings, runtime)
        served = Served(askdesk=askdesk)
        if slack is not None:
            served.slack, stopper, served.slack_port = await start_slack(settings, askdesk, runner, slack, host)
            running.append(stopper)
        if teams_auth is not None:
            from bot.teams.run import TeamsStartError, endpoint, start_teams
            from bot.teams.server import SWITCH_INTERVAL

            # this process serves: the Teams listener thread gets the GIL back sooner (server.py)
            sys.setswitchinterval(min(SWITCH_INTERVAL, sys.getswitchinterval()))

            try:
                teams = await start_teams(settings, askdesk, runner, host=host, auth=teams_auth)
            except TeamsStartError as exc:
                raise StartupError(str(exc)) from None
            running.append(teams.stop)
            served.teams, served.teams_port = teams.bot, teams.port
            typer.echo(f"askdesk: Teams bot listening on {endpoint(host, teams.port)}", err=True)
        # listening (Slack's first event is acked) while everything a first question needs loads
        started = time.perf_counter()
        await askdesk.warm_up()
        typer.echo(f"askdesk: ready (warmed up in {time.perf_counter() - started:.1f} s)", err=True)
        if on_ready is not None:
            on_ready(served)
        await stop.wait()
    finally:
        for stopper in reversed(running):
            try:
                await stopper()
            except Exception as exc:
                log.warning("stopping a surface failed: %s", type(exc).__name__)
        if admin is not None:
            await admin.close()
        if askdesk is not None:
            await askdesk.close()  # closes the state store too
        else:
            await state.close()
        if runtime is not None:
            await runtime.close()


async def run_slack(settings, *, host: str, stop: asyncio.Event | None = None) -> None:
    """`askdesk serve slack` (kept for callers of the single-surface entry point)."""
    await run_serve(settings, ["slack"], host=host, stop=stop)


def serve(
    surfaces: List[str] = typer.Argument(..., help="What to serve: slack, teams, or both (slack teams) in one process."),
    port: Optional[int] = typer.Option(None, help="Slack HTTP mode port (default ASKDESK_PORT or 3000)."),
    teams_port: Optional[int] = typer.Option(None, help="Teams messaging endpoint port (default ASKDESK_TEAMS_PORT or 3978)."),
    host: str = typer.Option("0.0.0.0", help="Bind address of the HTTP listeners."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log each request."),
) -> None:
    """Serve the chat bots: Slack (Socket Mode if SLACK_APP_TOKEN is set, else HTTP on /slack/events)
    and/or Teams (POST /api/messages), over one askdesk in one process."""
    from pydantic import ValidationError

    from agent.config import load_settings

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides: dict[str, Any] = {}
    if port is not None:
        overrides["port"] = port
    if teams_port is not None:
        overrides["teams_port"] = teams_port
    try:
        settings = load_settings(**overrides)
        asyncio.run(run_serve(settings, surfaces, host=host))
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
