"""The SDK's stream, with a refused, cancelled or unreachable flush ending quietly.

The Teams SDK flushes a stream in fire-and-forget tasks (`HttpStream._flush`). When Teams
refuses streaming (`StreamNotAllowedError`: some chats, tenants or bot settings) or the stream
was cancelled, nothing retrieves the task's exception and asyncio logs "Task exception was
never retrieved" with a traceback for every such message. `StreamReply` already falls back to
one posted message and remembers the refusal, so the flush itself catches those two and logs
one debug line; nothing process-wide (no loop exception handler) is changed for it.

When the Bot Connector cannot be reached (connection refused, DNS, timeout: see
bot/teams/connector.py), the SDK would retry each chunk eight times over ~20 s and log
"Final attempt failed." with a traceback before the same unretrieved task exception. Here the
first such failure is terminal (`ConnectorUnreachable`, which the SDK does not retry), is kept
in `failure` for the reply to act on (`on_failure` handlers run), and every later send of this
stream fails at once without a connection attempt.
"""

from __future__ import annotations

import logging
from typing import Callable

from microsoft_teams.apps import HttpStream
from microsoft_teams.apps.plugins.streamer import StreamCancelledError, StreamNotAllowedError

from bot.teams.connector import ConnectorUnreachable, unreachable

log = logging.getLogger("askdesk.teams")

EXPECTED = (StreamNotAllowedError, StreamCancelledError, ConnectorUnreachable)


class QuietStream(HttpStream):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.failure: ConnectorUnreachable | None = None
        self._failure_handlers: list[Callable[[], None]] = []

    def on_failure(self, handler: Callable[[], None]) -> None:
        """`handler()` runs once, when the connector first proves unreachable."""
        self._failure_handlers.append(handler)

    async def _send(self, to_send):
        if self.failure is not None:
            raise ConnectorUnreachable(str(self.failure))
        try:
            return await super()._send(to_send)
        except Exception as exc:
            if not unreachable(exc):
                raise
            self.failure = ConnectorUnreachable(type(exc).__name__)
            for handler in self._failure_handlers:
                handler()
            raise self.failure from None

    async def _flush(self) -> None:
        try:
            await super()._flush()
        except EXPECTED as exc:
            log.debug("Teams stream flush ended: %s", type(exc).__name__)
