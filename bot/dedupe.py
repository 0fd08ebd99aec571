"""Exactly-once answering, for every surface (Slack events, Teams activities).

Slack delivers a message twice when the app subscribes to both `app_mention` and
`message.*` (one event each), and re-delivers an event (`X-Slack-Retry-Num`) when an ack
was slow or lost. Both cases must produce one answer: events are remembered by
`event_id`, and a message is *claimed* by `channel:ts` only at the point we decide to
answer it (so the `message` copy of a mention can step aside for the `app_mention` copy).
Keys expire, so memory stays bounded. One process keeps its own memory: run one Slack
worker per app (Socket Mode and a single HTTP replica do).
"""

from __future__ import annotations

from bot.cache import bounded


class Deduper:
    def __init__(self, ttl_seconds: float = 600.0, max_keys: int = 50_000) -> None:
        self._seen = bounded(max_keys, ttl_seconds)

    def first_time(self, key: str) -> bool:
        """True the first time `key` is offered within the TTL, False for every repeat."""
        if key in self._seen:
            return False
        self._seen[key] = True
        return True

    def seen_event(self, event_id: str | None) -> bool:
        """True when this event id was already delivered (a Slack retry)."""
        if not event_id:
            return False
        return not self.first_time(f"event:{event_id}")

    def claim_message(self, channel: str, ts: str) -> bool:
        """Claim one user message for answering; False when another delivery already did."""
        return self.first_time(f"message:{channel}:{ts}")
