"""Where "Ask a person" sends a question, for every surface.

`ASKDESK_ESCALATION_CHANNEL` is a Slack channel id, or a Teams conversation id when only Teams
runs; `ASKDESK_ESCALATION_CHANNEL_TEAMS` is the Teams one when both run. With only one of them
set, the other surface's questions go there too (across surfaces). A Teams conversation id has
a colon (`19:…@thread.tacv2`, `a:…`); a Slack channel id never does. A target on the other
surface is reachable only when that surface runs in this process and has registered its desk.
"""

from __future__ import annotations

from typing import Literal, Protocol

from agent.config import Settings
from agent.state.base import Escalation

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


class EscalationDesk(Protocol):
    """One surface's side of an escalation that crosses surfaces: post a question asked elsewhere
    into its escalation channel, and deliver a person's reply to an asker on this surface."""

    async def post(self, escalation: Escalation) -> str:
        """Post `escalation` into its target channel; the escalation thread's id. Raises when it cannot."""

    async def relay(self, escalation: Escalation) -> bool:
        """The expert's reply, attributed, to the asker on this surface; never raises (False: not delivered)."""


class EscalationDesks:
    """The surfaces running in this process, by name: each registers its desk when it starts, so a
    question can be passed to a person on the other one without either surface importing the other."""

    def __init__(self) -> None:
        self._desks: dict[str, EscalationDesk] = {}

    def register(self, surface: str, desk: EscalationDesk) -> None:
        self._desks[surface] = desk

    def get(self, surface: str) -> EscalationDesk | None:
        return self._desks.get(surface)


def reachable_target(settings: Settings, surface: str, desks: EscalationDesks) -> Target | None:
    """The escalation target of `surface` when it can be reached from here: on the same surface, or
    on another one that runs in this process; None: no "Ask a person" button."""
    target = escalation_target(settings, surface)
    if target is None or (target[0] != surface and desks.get(target[0]) is None):
        return None
    return target
