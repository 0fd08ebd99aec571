"""Teams refusing a stream is expected, not an error to log with a traceback.

The Teams SDK flushes a stream in fire-and-forget tasks (`HttpStream._flush`). When Teams
refuses streaming (`StreamNotAllowedError`: some chats, tenants or bot settings) or the stream
was cancelled, nothing retrieves the task's exception, so asyncio logs "Task exception was
never retrieved" with a traceback for every such message. `StreamReply` already falls back to
one posted message and remembers the refusal; this loop exception handler turns those two
exceptions into one debug line and hands every other unhandled exception on unchanged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from microsoft_teams.apps.plugins.streamer import StreamCancelledError, StreamNotAllowedError

log = logging.getLogger(__name__)

EXPECTED = (StreamNotAllowedError, StreamCancelledError)


def quiet_stream_refusals(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """Install the handler on `loop`; returns the function that restores the previous one."""
    previous = loop.get_exception_handler()

    def handler(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if isinstance(context.get("exception"), EXPECTED):
            log.debug("Teams stream flush ended: %s", type(context["exception"]).__name__)
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handler)
    return lambda: loop.set_exception_handler(previous)
