""""Sync now" on the Sources page: one source's sync (agent/sources/sync.py: `sync_all` with its
name) run in the background by this process, which holds the store, and its result kept for
the page. One sync per source at a time; a second press while it runs does nothing new."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.console")


class SyncJob(BaseModel):
    source: str
    state: Literal["running", "done", "failed"] = "running"
    started: float
    finished: float | None = None
    summary: str = ""  # SyncReport.summary(), or why it failed


class SyncJobs:
    def __init__(self, runtime: "Runtime") -> None:
        self.runtime = runtime
        self.jobs: dict[str, SyncJob] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def running(self, name: str) -> bool:
        job = self.jobs.get(name)
        return job is not None and job.state == "running"

    def start(self, name: str) -> bool:
        """Start syncing `name`; False when it is already syncing."""
        if self.running(name):
            return False
        self.jobs[name] = SyncJob(source=name, started=time.time())
        task = asyncio.create_task(self._run(name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _run(self, name: str) -> None:
        from agent.sources.sync import sync_all

        job = self.jobs[name]
        try:
            reports = await sync_all(self.runtime, [name])
            job.summary = "; ".join(r.summary() for r in reports) or f"{name}: nothing to sync"
            job.state = "failed" if any(r.error for r in reports) else "done"
        except asyncio.CancelledError:
            job.state, job.summary = "failed", "stopped: askdesk is shutting down"
            raise
        except Exception as exc:  # a bad sources.yaml, an unknown source, the store is down
            log.warning("console: sync of %s failed: %s: %s", name, type(exc).__name__, exc)
            job.state, job.summary = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            job.finished = time.time()

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
