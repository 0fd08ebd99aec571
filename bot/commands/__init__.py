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
