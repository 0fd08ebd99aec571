"""Starting a fake service on an ephemeral loopback port (every fake server here does it)."""

from __future__ import annotations

from aiohttp import web


async def serve(app: web.Application) -> tuple[web.AppRunner, int]:
    """`app` listening on 127.0.0.1 at a free port: its runner (to clean up) and the port."""
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    return runner, next(iter(runner.addresses))[1]
