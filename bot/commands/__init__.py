"""CLI command groups; each module exposes register(app)."""

from __future__ import annotations

import asyncio

from agent.config import load_settings
from agent.runtime import Runtime


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
