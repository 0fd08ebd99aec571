"""Syncing while `askdesk serve` runs: each source when its interval has passed since its last
attempt (its own `interval_minutes`, else ASKDESK_SYNC_INTERVAL). sources.yaml is read again
every round, so an edit applies without a restart; a source that fails is retried at its next
turn and never stops the others or the bot."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Awaitable, Callable

from agent.sources.config import SourcesFileError, load_sources
from agent.sources.sync import open_state, sync_source

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.sources")

IDLE = 60.0  # seconds between looks at sources.yaml when nothing is due sooner


async def sync_due(runtime: "Runtime", *, now: float | None = None) -> float | None:
    """Sync every source that is due; the seconds until the next one is (None: none scheduled)."""
    settings = runtime.settings
    now = time.time() if now is None else now
    sources = load_sources(settings)
    state = open_state(runtime)
    next_in: float | None = None
    try:
        for source in sources:
            interval = (source.config.interval_minutes or settings.sync_interval) * 60
            if not interval:
                continue
            row = state.source(source.name)
            last = (row.last_attempt or row.last_sync) if row else None
            if last is None or now >= last + interval:
                try:
                    report = await sync_source(runtime, source, state)
                    log.info("%s", report.summary())
                finally:
                    await source.close()
                wait = interval
            else:
                wait = last + interval - now
            next_in = wait if next_in is None else min(next_in, wait)
    finally:
        state.close()
    return next_in


async def keep_in_sync(runtime: "Runtime", stop: asyncio.Event,
                       sleep: Callable[[float], Awaitable[None]] | None = None) -> None:
    """Run `sync_due` until `stop` is set."""
    async def pause(seconds: float) -> None:
        if sleep is not None:
            await sleep(seconds)
            return
        try:
            await asyncio.wait_for(stop.wait(), timeout=seconds)
        except asyncio.TimeoutError:
            pass

    reported: str | None = None
    while not stop.is_set():
        try:
            next_in = await sync_due(runtime)
            reported = None
        except SourcesFileError as exc:
            if str(exc) != reported:  # once per distinct mistake, not every minute
                log.warning("sources: %s", exc)
                reported = str(exc)
            next_in = None
        except Exception as exc:  # the store is down, a plug-in's bug: the bot goes on
            log.warning("sources: sync failed: %s: %s", type(exc).__name__, exc)
            next_in = None
        await pause(min(next_in if next_in is not None else IDLE, IDLE))
