"""An unreachable Bot Connector: the `serviceUrl` of a conversation refuses connections, does
not resolve, times out or drops the connection.

Then nothing of the answer can reach Teams — not the stream's chunks, not the typing indicator,
not the final message, not an apology — and each attempt would log its own failure (the SDK's
stream alone retries every chunk eight times over ~20 s, ending in "Final attempt failed."
tracebacks and "Task exception was never retrieved"). So the Teams surface stops sending for
that answer at the first such failure (the stream fails fast, the typing indicator stops),
tries the final message once, and reports the answer as one WARNING (bot/teams/answer.py);
an HTTP error answered by the connector (a 4xx/5xx) is not this, and keeps its own handling.
"""

from __future__ import annotations

import httpx
from microsoft_teams.apps.plugins.streamer import TerminalStreamError


class ConnectorUnreachable(TerminalStreamError):
    """A stream send could not reach the Bot Connector (terminal: the SDK does not retry it)."""


def unreachable(exc: BaseException) -> bool:
    """Did `exc` come from not reaching the Bot Connector (rather than from its answer)?"""
    return isinstance(exc, (ConnectorUnreachable, httpx.TransportError, ConnectionError))
