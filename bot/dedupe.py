"""Exactly-once answering, for every surface and across replicas (Slack events, Teams activities).

Slack delivers a message twice when the app subscribes to both `app_mention` and
`message.*` (one event each), and re-delivers an event (`X-Slack-Retry-Num`) when an ack
was slow or lost, to any replica. Both cases must produce one answer: events are claimed by
`event_id`, and a message is claimed by `channel:ts` only at the point we decide to answer it
(so the `message` copy of a mention can step aside for the `app_mention` copy). Claims live in
the state store (SQLite, or PostgreSQL shared by replicas) and expire. A claim is settled once
its answer is delivered; one whose holder died before that (a replica killed mid-turn) is
taken over by the next delivery, so Slack's retry is answered by another replica.
"""

from __future__ import annotations

from agent.state import Claims

CLAIM_TTL_S = 3600.0  # Slack retries for up to ~5 minutes; Teams re-sends within seconds


class Deliveries:
    def __init__(self, state: Claims, ttl_seconds: float = CLAIM_TTL_S) -> None:
        self.state = state
        self.ttl = ttl_seconds

    async def first_time(self, key: str, *, ttl_s: float | None = None) -> bool:
        """True the first time `key` is offered within the TTL (settled at once: for notices,
        welcomes and other work that is done when it is decided)."""
        return await self.state.claim(key, ttl_s or self.ttl, settled=True)

    async def claim(self, key: str) -> bool:
        """Claim work that is done only when `settle(key)` is called."""
        return await self.state.claim(key, self.ttl)

    async def seen_event(self, event_id: str | None) -> bool:
        """True when this Slack event is already being handled or was handled (a retry)."""
        if not event_id:
            return False
        return not await self.claim(event_key(event_id))

    async def claim_message(self, channel: str, ts: str) -> bool:
        """Claim one user message for answering; False when another delivery already did."""
        return await self.claim(message_key(channel, ts))

    async def settle(self, *keys: str) -> None:
        await self.state.settle(*keys)


def event_key(event_id: str) -> str:
    return f"slack:event:{event_id}"


def message_key(channel: str, ts: str) -> str:
    return f"slack:message:{channel}:{ts}"
