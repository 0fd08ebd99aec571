"""Work a surface runs after its HTTP response (an answer after Teams' acknowledgement),
kept referenced until done, drained on shutdown and in tests; a failure is one log line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

log = logging.getLogger("askdesk.tasks")


class BackgroundTasks:
    def __init__(self, name: str) -> None:
        self.name = name
        self._inflight: set[asyncio.Task] = set()

    def __len__(self) -> int:
        return len(self._inflight)

    def spawn(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task) -> None:
        self._inflight.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: background work failed: %s", self.name, type(task.exception()).__name__)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until the work started so far has finished (at most `timeout` seconds)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await asyncio.sleep(0)
        while self._inflight and loop.time() < deadline:
            await asyncio.wait(list(self._inflight), timeout=max(0.01, deadline - loop.time()))
