"""The request keys the console's middlewares set and its handlers read (their own module:
the shared state and the handlers both need them, and neither may import the other)."""

from __future__ import annotations

from typing import Any

from aiohttp import web


def _request_key(name: str, kind: type) -> Any:
    """A typed request key where aiohttp has them (3.12+), else its name."""
    maker = getattr(web, "RequestKey", None)
    return maker(name, kind) if maker is not None else name


STARTED = _request_key("console_started", float)
SESSION = _request_key("console_session", object)  # the request's Session, or None
LOGIN = _request_key("console_login", str)  # the login cookie's value set by this response
