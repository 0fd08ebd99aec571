"""The console's aiohttp application: the routes of every page module around its shared state
(`Console`, bot/console/state.py, which no page module's import reaches back from here). aiohttp because askdesk already serves Slack's HTTP mode with it
and a second web framework would add nothing a handful of pages need (docs/console.md)."""

from __future__ import annotations

import logging
from importlib import resources

from aiohttp import web

from bot.console import escalations, learned, login, overview, playground, revisit, sources
from bot.console.guard import add_headers, middlewares, public
from bot.console.shared import CONSOLE
from bot.console.state import Console

log = logging.getLogger("askdesk.console")

STATIC = {"console.css": "text/css", "console.js": "text/javascript"}


def application(console: Console) -> web.Application:
    """The console's aiohttp application: its middlewares (sessions, CSRF, headers) and every page's routes."""
    app = web.Application(middlewares=middlewares(console), client_max_size=256 * 1024)
    app[CONSOLE] = console
    app.on_response_prepare.append(add_headers)
    app.router.add_get("/static/{name}", static)
    for module in (login, overview, sources, learned, escalations, revisit, playground):
        module.add_routes(app.router)
    return app


@public
async def static(request: web.Request) -> web.Response:
    """The console's own CSS and JS (a fixed list: no path from the URL reaches the disk)."""
    name = request.match_info["name"]
    if name not in STATIC:
        raise web.HTTPNotFound()
    body = resources.files("bot.console").joinpath("static", name).read_bytes()
    return web.Response(body=body, content_type=STATIC[name], headers={"Cache-Control": "max-age=3600"})
