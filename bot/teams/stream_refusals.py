"""The SDK's stream, with a refused or cancelled flush ending quietly.

The Teams SDK flushes a stream in fire-and-forget tasks (`HttpStream._flush`). When Teams
refuses streaming (`StreamNotAllowedError`: some chats, tenants or bot settings) or the stream
was cancelled, nothing retrieves the task's exception and asyncio logs "Task exception was
never retrieved" with a traceback for every such message. `StreamReply` already falls back to
one posted message and remembers the refusal, so the flush itself catches those two and logs
one debug line; nothing process-wide (no loop exception handler) is changed for it.
"""

from __future__ import annotations

import logging

from microsoft_teams.apps import HttpStream
from microsoft_teams.apps.plugins.streamer import StreamCancelledError, StreamNotAllowedError

log = logging.getLogger("askdesk.teams")

EXPECTED = (StreamNotAllowedError, StreamCancelledError)


class QuietStream(HttpStream):
    async def _flush(self) -> None:
        try:
            await super()._flush()
        except EXPECTED as exc:
            log.debug("Teams stream flush ended: %s", type(exc).__name__)
