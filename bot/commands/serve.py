"""`askdesk serve <surface>...`: run the named surfaces (slack, teams, mcp, or any a plug-in
registers: bot/surface.py) in ONE process over one Askdesk and one turn runner.

The embedded stores admit one process per data dir, so every surface is served by the same
process (`askdesk serve slack teams`), and a second `askdesk serve` on the same data dir stops
at once with one line naming the holder (agent/store/lock.py, exit code 3), before it contacts
any platform. `askdesk ingest` hands its jobs to the running server through the local admin
channel (bot/admin).

Each surface goes through the same steps, and this module names none of them: its
configuration is checked (`Surface(settings)`) before anything opens, it reaches its platform
(`connect`) before the stores open, it starts over the shared service (`start(desk)`) and is
stopped, in reverse order, at SIGINT/SIGTERM. Configuration mistakes (missing or rejected
credentials, a busy port or data dir, an unknown surface) end with one clear line on stderr
and exit code 2, never a traceback; a surface plug-in that fails to load is one log line and
the others serve.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, List, Optional, TypeVar

import typer

if TYPE_CHECKING:
    from agent.plugins import Registrar
    from bot.surface import Surface

log = logging.getLogger("askdesk.serve")
T = TypeVar("T")


class StartupError(Exception):
    """A configuration problem: printed as one line, exit code 2."""


def register(app: typer.Typer) -> None:
    app.command("serve", no_args_is_help=True)(serve)


async def _cancel(task: asyncio.Task) -> None:
    task.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass


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
    """What `run_serve` started (tests and benchmarks reach the bots through `on_ready`):
    `served.surfaces["slack"]`, or by name, `served.slack` (its running bot) and
    `served.slack_port` (where it listens)."""

    askdesk: Any
    surfaces: dict[str, "Surface"] = field(default_factory=dict)
    reviews: Any = None  # the learned answers' review round (agent/knowledge/learned_review.py)

    def __getattr__(self, name: str) -> Any:
        surfaces = self.__dict__.get("surfaces") or {}
        surface = surfaces.get(name.removesuffix("_port"))
        if surface is None:
            raise AttributeError(name)
        return surface.app if name == surface.name else surface.port


def available(plugins: "Registrar") -> str:
    return ", ".join(sorted(plugins.surfaces)) or "none is installed"


def parse_surfaces(names: list[str], plugins: "Registrar") -> list[str]:
    """The registered surfaces named, in order, once each; StartupError for an unknown one (with
    why, when its plug-in failed to load)."""
    chosen: list[str] = []
    for name in names:
        key = name.strip().lower()
        if key not in plugins.surfaces:
            broken = next((error for plugin, _, error in plugins.failed if plugin == key), None)
            why = f" (its plug-in failed to load: {broken.splitlines()[0]})" if broken else ""
            raise StartupError(f"unknown surface {name!r}{why}: choose {available(plugins)}, or several "
                               "(askdesk serve slack teams).")
        if key not in chosen:
            chosen.append(key)
    if not chosen:
        raise StartupError(f"name the surface(s) to serve: {available(plugins)} (askdesk serve slack teams).")
    return chosen


def configure(plugins: "Registrar", names: list[str], settings) -> list["Surface"]:
    """Each named surface with its configuration checked; nothing is opened yet."""
    from pydantic import ValidationError
    from pydantic_settings import SettingsError

    from agent.config import PluginSettings
    from bot.surface import Surface, SurfaceError

    surfaces = []
    for name in parse_surfaces(names, plugins):
        cls = plugins.surfaces[name]
        if not (isinstance(cls, type) and issubclass(cls, Surface)):
            raise StartupError(f"surface {name!r} ({cls!r}) is not a bot.surface.Surface: its plug-in cannot serve.")
        try:
            surfaces.append(cls(settings))
        except SurfaceError as exc:
            raise StartupError(str(exc)) from None
        except ValidationError as exc:  # its own settings: named by their variable, not the field
            first = exc.errors()[0]
            where = str(first.get("loc", ("?",))[0])
            config = getattr(cls, "settings", None)
            if isinstance(config, type) and issubclass(config, PluginSettings) and where in config.model_fields:
                where = config.env_names(where)[0]
            raise StartupError(f"invalid setting {where}: {first.get('msg')}") from None
        except SettingsError as exc:  # a value the environment gives that is not JSON where JSON is due
            raise StartupError(f"invalid setting of the {name} surface: {exc}") from None
    return surfaces


async def _step(surface: "Surface", step: Awaitable[T]) -> T:
    """A surface's `connect` or `start`: its SurfaceError, or a plug-in's bug, as one line."""
    from bot.surface import SurfaceError

    try:
        return await step
    except SurfaceError as exc:
        raise StartupError(str(exc)) from None
    except Exception as exc:
        log.debug("the %s surface did not start", surface.name, exc_info=True)
        raise StartupError(f"the {surface.name} surface did not start: {type(exc).__name__}: {exc}") from None


async def run_serve(settings, surfaces: list[str], *, host: str, stop: asyncio.Event | None = None,
                    on_ready: Callable[[Served], Any] | None = None, plugins: "Registrar | None" = None) -> None:
    """Start the surfaces over one Askdesk and serve until `stop` is set (or SIGINT/SIGTERM).
    `plugins`: where surfaces are found (default: the installed `askdesk.plugins` entry points)."""
    from agent.plugins import plugins as installed
    from agent.runtime import Runtime
    from agent.store import StoreInUse
    from agent.store.lock import DirectoryLock
    from agent.turn.service import Askdesk
    from bot.surface import Desk
    from bot.turn import TurnRunner

    registered = installed() if plugins is None else plugins
    # every configuration check first: nothing is opened for a setup that cannot start
    chosen = configure(registered, surfaces, settings)
    if not settings.qdrant_url:
        DirectoryLock.check_free(settings.data_dir)  # StoreInUse: one line (exit 3) before any platform call

    running: list[Callable[[], Any]] = []
    askdesk = runtime = admin = None
    state = await open_state_store(settings)  # a database that is down stops the start here
    try:
        for surface in chosen:
            await _step(surface, surface.connect())  # a rejected token stops the start here
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
        # one rate limit, one set of answer records, one set of escalation desks for every surface
        runner = TurnRunner(askdesk, surfaces=registered.surfaces)
        admin = await start_admin_channel(settings, runtime)
        desk = Desk(settings=settings, askdesk=askdesk, runner=runner, host=host)
        served = Served(askdesk=askdesk)
        for surface in chosen:
            running.append(await _step(surface, surface.start(desk)))
            served.surfaces[surface.name] = surface
        # listening (Slack's first event is acked) while everything a first question needs loads
        started = time.perf_counter()
        await askdesk.warm_up()
        typer.echo(f"askdesk: ready (warmed up in {time.perf_counter() - started:.1f} s)", err=True)
        from agent.sources.schedule import keep_in_sync

        syncing = asyncio.create_task(keep_in_sync(runtime, stop))  # sources.yaml, every ASKDESK_SYNC_INTERVAL
        running.append(lambda: _cancel(syncing))
        from agent.knowledge.learned_review import Reviews, keep_reviewed

        notifiers = {s.name: n for s in chosen if (n := s.review_notifier()) is not None}
        served.reviews = Reviews(askdesk.learned_answers, askdesk.state, notifiers)  # learned answers age
        reviewing = asyncio.create_task(keep_reviewed(served.reviews, stop))
        running.append(lambda: _cancel(reviewing))
        if settings.revisit_notify:  # notes to the askers of answers whose cited document changed
            from bot.revisit import keep_noting

            noting = asyncio.create_task(keep_noting(runner.revisits, askdesk, stop))
            running.append(lambda: _cancel(noting))
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
    surfaces: List[str] = typer.Argument(..., help="What to serve: slack, teams, mcp (MCP over HTTP), a plug-in's "
                                         "surface (askdesk plugins lists them), or several in one process."),
    port: Optional[int] = typer.Option(None, help="Slack HTTP mode port (default ASKDESK_PORT or 3000)."),
    teams_port: Optional[int] = typer.Option(None, help="Teams messaging endpoint port (default ASKDESK_TEAMS_PORT or 3978)."),
    host: str = typer.Option("0.0.0.0", help="Bind address of the HTTP listeners."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log each request."),
) -> None:
    """Serve the surfaces, over one askdesk in one process: Slack (Socket Mode if SLACK_APP_TOKEN
    is set, else HTTP on /slack/events), Teams (POST /api/messages), MCP (/mcp), a plug-in's."""
    from pydantic import ValidationError

    from agent.config import load_settings

    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    overrides: dict[str, Any] = {}
    if port is not None:
        overrides["port"] = port
    if teams_port is not None:
        overrides["teams_port"] = teams_port  # a keyword for the Teams surface's own settings
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

