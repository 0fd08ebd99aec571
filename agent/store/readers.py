"""Searches in flight, by the generation of the file-version record they read.

A search reads the record of hidden versions (agent/knowledge/versions.py) and then queries
with it. A writer that changes the record and then deletes or adds points must first let the
searches that read the older record finish: one of them could otherwise query with a filter
that hides the new version while the old one is being deleted, and find neither. `advance()`
starts a new generation and waits for every search of an older one. Searches of other
processes (bot replicas on a shared Qdrant server) are not seen here; see docs/scaling.md.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

POLL_SECONDS = 0.005
# a search never holds a writer longer than this (e.g. one stuck on an unreachable server)
DRAIN_TIMEOUT = 30.0


class Readers:
    def __init__(self) -> None:
        self.generation = 0
        self._active: Counter[int] = Counter()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Wrap a read of the record and every query that uses it."""
        generation = self.generation
        self._active[generation] += 1
        try:
            yield
        finally:
            self._active[generation] -= 1
            if not self._active[generation]:
                del self._active[generation]

    @property
    def busy(self) -> bool:
        """A search is in flight (background work waits: `Runtime.idle`)."""
        return bool(self._active)

    async def advance(self, timeout: float = DRAIN_TIMEOUT) -> None:
        """The record just changed: wait until no search that may have read the old one runs."""
        self.generation += 1
        deadline = time.monotonic() + timeout
        while any(g < self.generation for g in self._active) and time.monotonic() < deadline:
            await asyncio.sleep(POLL_SECONDS)
