"""CLI command groups; each module exposes register(app)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Literal

import typer

from agent.config import load_settings
from agent.runtime import Runtime

EXIT_IN_USE = 3  # another process holds the embedded store
EXIT_USAGE = 2  # a bad argument or path: one `error: …` line (bot/cli.py)


def usage_error(message: str) -> SystemExit:
    """The one line for a bad argument or path, exit code 2, in every command."""
    from bot.printable import printable

    typer.echo(f"error: {printable(message)}", err=True)
    return SystemExit(EXIT_USAGE)


def existing(path: Path, kind: Literal["file", "directory", "any"] = "any") -> Path:
    """`path` if it exists (and is a file or a directory, when `kind` says which); else the
    usage error, worded the same way by every command, before any work is done."""
    if not path.exists():
        raise usage_error(f"{path}: no such file or directory")
    if kind == "file" and not path.is_file():
        raise usage_error(f"{path} is not a file")
    if kind == "directory" and not path.is_dir():
        raise usage_error(f"{path} is not a directory")
    return path


def writable_target(path: Path, *, makes_parents: bool = False) -> Path:
    """`path` if a file can be written there (not a directory; its directory exists, unless the
    command creates it); checked before the work, so a typo in --out or --html costs nothing."""
    if path.is_dir():
        raise usage_error(f"{path} is a directory: give a file name")
    if not makes_parents and not path.parent.is_dir():
        raise usage_error(f"{path.parent}: no such directory")
    return path


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
