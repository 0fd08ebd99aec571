"""Bounded in-memory caches for the Slack layer (cachetools).

Every per-process memory here — delivered events, claimed messages, thread history,
questions awaiting feedback, workspaces where a Slack feature is refused — is capped in
size, and in age where it goes stale, so a long-running bot's memory stays flat.
"""

from __future__ import annotations

from typing import Any

from cachetools import LRUCache, TTLCache


def bounded(maxsize: int, ttl: float | None = None) -> "LRUCache[Any, Any]":
    """A dict-like cache of at most `maxsize` entries (least recently used dropped first),
    whose entries also expire after `ttl` seconds when given."""
    return TTLCache(maxsize=maxsize, ttl=ttl) if ttl else LRUCache(maxsize=maxsize)


class CoolDown:
    """Keys (team ids) for which a feature is off for a while, then tried again."""

    def __init__(self, seconds: float, maxsize: int = 10_000) -> None:
        self._off = bounded(maxsize, seconds)

    def pause(self, key: str) -> None:
        self._off[key] = True

    def __contains__(self, key: object) -> bool:
        return key in self._off
