"""Who the bot is: the SDK's own variables (CLIENT_ID, CLIENT_SECRET, TENANT_ID) or, for
local development only, the unauthenticated mode (ASKDESK_TEAMS_DEV_MODE=true).

Checked before anything starts, so a missing variable is one clear line, not a bot that
rejects every request with 401 (what the SDK does without credentials).
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.teams.settings import TeamsSettings


class TeamsConfigError(Exception):
    """A configuration problem, printed as one line by `askdesk serve`."""


@dataclass(frozen=True)
class TeamsAuth:
    client_id: str | None
    client_secret: str | None
    tenant_id: str | None
    dev_mode: bool

    @property
    def authenticated(self) -> bool:
        return bool(self.client_id and self.client_secret)


DEV_MODE_WARNING = (
    "warning: ASKDESK_TEAMS_DEV_MODE is on: Teams requests are accepted WITHOUT authentication. "
    "Use it only on your machine or behind a dev tunnel you control."
)


def teams_auth(teams: TeamsSettings) -> TeamsAuth:
    """The credentials to start with, or TeamsConfigError naming what is missing."""
    client_id = teams.client_id or None
    client_secret = (teams.client_secret.get_secret_value() or None) if teams.client_secret else None
    tenant_id = teams.tenant_id or None
    if teams.dev_mode:
        # No credentials: the SDK fetches no tokens and the connector is called without one.
        return TeamsAuth(client_id, client_secret, tenant_id, dev_mode=True)
    if not client_id or not client_secret:
        missing = " and ".join(n for n, v in (("CLIENT_ID", client_id), ("CLIENT_SECRET", client_secret)) if not v)
        raise TeamsConfigError(
            f"{missing} not set: register the bot (Teams Developer Portal or an Azure Bot resource, see "
            "docs/teams.md) and set CLIENT_ID, CLIENT_SECRET and TENANT_ID, or set "
            "ASKDESK_TEAMS_DEV_MODE=true for local testing without authentication."
        )
    return TeamsAuth(client_id, client_secret, tenant_id, dev_mode=False)
