"""How a handler reaches the console's shared state (its own module, so that page modules and
the application that lists them do not import each other)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from bot.console.keys import LOGIN, SESSION, STARTED  # noqa: F401  (the handlers import them from here)

if TYPE_CHECKING:
    from bot.console.state import Console
    from bot.console.sessions import Session

CONSOLE: web.AppKey["Console"] = web.AppKey("console")


def console_of(request: web.Request) -> "Console":
    return request.app[CONSOLE]


def redirect(location: str, status: int = 303) -> web.Response:
    """A redirect returned, not raised, so cookies can be set on it."""
    return web.Response(status=status, headers={"Location": location})


def session_of(request: web.Request) -> "Session | None":
    return request.get(SESSION)


def signed_in_session(request: web.Request) -> "Session":
    """The session of a guarded handler (the guard let no request in without one)."""
    session = request.get(SESSION)
    assert session is not None, "a guarded route ran without a session"
    return session
