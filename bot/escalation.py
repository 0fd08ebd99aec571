"""Where "Ask a person" sends a question, for every surface.

A channel is named by an id only the surface it belongs to can tell apart, so a configured id
is resolved by asking each registered surface (`Surface.target(ref)`: Slack knows its channel
ids, Teams its conversation ids). A question asked on a surface goes to that surface's own
escalation channel when it has one (Teams: ASKDESK_ESCALATION_CHANNEL_TEAMS), else to
ASKDESK_ESCALATION_CHANNEL, else to another running surface's own channel: with one channel
configured, every surface's questions go there (across surfaces). A target on another surface
is reachable only when that surface runs in this process and has registered its desk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple, Protocol

from agent.config import Settings
from agent.state.base import Escalation


class Target(NamedTuple):
    """A channel "Ask a person" posts into, and the surface it is on."""

    surface: str
    channel: str


class EscalationDesk(Protocol):
    """One surface's side of an escalation that crosses surfaces: post a question asked elsewhere
    into its escalation channel, and deliver a person's reply to an asker on this surface."""

    async def post(self, escalation: Escalation) -> str:
        """Post `escalation` into its target channel; the escalation thread's id. Raises when it cannot."""

    async def relay(self, escalation: Escalation) -> bool:
        """The expert's reply, attributed, to the asker on this surface; never raises (False: not delivered)."""


class EscalationDesks:
    """The surfaces running in this process, by name: each registers its desk (and its own
    escalation channel, if it has one) when it starts, so a question can be passed to a person on
    another one without either surface importing the other. `surfaces` are the registered surface
    classes asked which of them a channel id belongs to (default: the installed plug-ins')."""

    def __init__(self, surfaces: Mapping[str, Any] | None = None) -> None:
        self._desks: dict[str, EscalationDesk] = {}
        self._own: dict[str, str] = {}
        self._surfaces = surfaces

    @property
    def surfaces(self) -> Mapping[str, Any]:
        if self._surfaces is None:
            from agent.plugins import plugins

            self._surfaces = plugins().surfaces
        return self._surfaces

    def register(self, surface: str, desk: EscalationDesk, *, channel: str | None = None) -> None:
        """`channel`: this surface's own escalation channel (its questions go there first)."""
        self._desks[surface] = desk
        if channel:
            self._own[surface] = channel

    def get(self, surface: str) -> EscalationDesk | None:
        return self._desks.get(surface)

    def own(self, surface: str) -> str | None:
        return self._own.get(surface)

    def resolve(self, ref: str) -> Target | None:
        """The surface `ref` is a channel of, asked of each registered surface; None: none knows it."""
        for cls in self.surfaces.values():
            target = cls.target(ref) if hasattr(cls, "target") else None
            if target is not None:
                return target
        return None

    def target(self, settings: Settings, surface: str) -> Target | None:
        """Where a question asked on `surface` is passed to a person; None: nowhere configured."""
        if own := self._own.get(surface):
            return Target(surface, own)
        if settings.escalation_channel:
            return self.resolve(settings.escalation_channel)
        for other, channel in self._own.items():
            return Target(other, channel)
        return None

    def channels(self, settings: Settings) -> set[str]:
        """Every configured escalation channel (where a person's reply may be relayed from)."""
        return {c for c in (settings.escalation_channel, *self._own.values()) if c}


def reachable_target(settings: Settings, surface: str, desks: EscalationDesks) -> Target | None:
    """The escalation target of `surface` when it can be reached from here: on the same surface, or
    on another one that runs in this process; None: no "Ask a person" button."""
    target = desks.target(settings, surface)
    if target is None or (target.surface != surface and desks.get(target.surface) is None):
        return None
    return target
