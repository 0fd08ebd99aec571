"""Where "Ask a person" sends a question, for every surface.

`ASKDESK_ESCALATION_CHANNEL` is a Slack channel id, or a Teams conversation id when only Teams
runs; `ASKDESK_ESCALATION_CHANNEL_TEAMS` is the Teams one when both run. With only one of them
set, the other surface's questions go there too (across surfaces). A Teams conversation id has
a colon (`19:…@thread.tacv2`, `a:…`); a Slack channel id never does.
"""

from __future__ import annotations

from typing import Literal

from agent.config import Settings

Target = tuple[Literal["slack", "teams"], str]


def surface_of(channel: str) -> Literal["slack", "teams"]:
    return "teams" if ":" in channel else "slack"


def escalation_target(settings: Settings, surface: str) -> Target | None:
    """(surface, channel) where a question asked on `surface` is passed to a person; None: off."""
    slack, teams = settings.escalation_channel, settings.escalation_channel_teams
    if surface == "teams" and teams:
        return "teams", teams
    if slack:
        return surface_of(slack), slack
    if teams:
        return "teams", teams
    return None


def escalation_channels(settings: Settings) -> set[str]:
    """Every configured escalation channel (where a person's reply may be relayed from)."""
    return {c for c in (settings.escalation_channel, settings.escalation_channel_teams) if c}
