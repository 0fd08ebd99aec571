"""CLI command groups; each module exposes register(app)."""

from __future__ import annotations

import asyncio

import typer

from agent.config import load_settings
from agent.runtime import Runtime

EXIT_IN_USE = 3  # another process holds the embedded store


def store_in_use(exc: Exception) -> SystemExit:
    """The one line for StoreInUse; a SystemExit so no `except Exception` swallows it."""
    typer.echo(f"error: {exc}", err=True)
    return SystemExit(EXIT_IN_USE)


def emit(output) -> None:
    """Print a JobOutput (bot/admin/protocol.py) and exit with its code; a job's lines can quote
    file names, so no control character reaches the terminal (bot/printable.py)."""
    from bot.printable import printable

    for line in output.stdout:
        typer.echo(printable(line, multiline=True))
    for line in output.stderr:
        typer.echo(printable(line, multiline=True), err=True)
    if output.code:
        raise typer.Exit(output.code)


def hand_over(request, exc: Exception, on_event=None):
    """Run `request` (a bot.admin JobRequest) on the `askdesk serve` that holds the store and
    return its JobOutput; the one-line in-use error when no server listens there."""
    from bot.admin.client import submit
    from bot.admin.location import recorded_path

    holder = getattr(exc, "holder", {}) or {}
    data_dir = load_settings().data_dir
    path = recorded_path(holder, data_dir)

    def event(ev) -> None:
        if ev.event == "connected":
            typer.echo(f"askdesk: the running bot (pid {holder.get('pid', '?')}) holds the store; "
                       "it runs this job now", err=True)
        elif on_event is not None:
            on_event(ev)

    try:
        output = asyncio.run(submit(data_dir, request, event, path))
    except KeyboardInterrupt:
        typer.echo("interrupted; the running bot finishes the job (run the command again to see the result)",
                   err=True)
        raise SystemExit(130) from None
    if output is None and str(holder.get("command", "")).startswith("askdesk serve"):
        typer.echo(f"error: the data directory {data_dir} is held by the running bot (pid {holder.get('pid', '?')}), "
                   f"but its admin channel does not answer at {path}, so this job was not handed to it; stop the "
                   "bot and run the command again", err=True)
        raise SystemExit(EXIT_IN_USE)
    if output is None:
        raise store_in_use(exc)
    return output


def run_with_runtime(coro_factory):
    """Run `coro_factory(runtime)` with one Runtime for the command, always closed
    (embedded Qdrant holds a directory lock)."""

    async def main():
        runtime = Runtime.open(load_settings())
        try:
            return await coro_factory(runtime)
        finally:
            await runtime.close()

    return asyncio.run(main())
