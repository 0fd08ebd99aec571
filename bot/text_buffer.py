"""Batches streamed answer text into few surface updates.

A chat surface pays per update (Slack's append calls are rate limited; Teams throttles
its stream), while the model sends a few characters at a time. The buffer sends the
first text at once (the user sees the answer start as soon as the model does), then
waits until `chars` characters are buffered — flushed at a sentence end when one comes
within a quarter more, else anyway — or until the oldest unsent text is `seconds` old
(a slow model, or one that pauses, still shows progress). `close()` returns whatever is
left for the surface's closing call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

SENTENCE_END = (".", "!", "?", ":", "\n", "…")


class TextBuffer:
    def __init__(self, send: Callable[[str], Awaitable[None]], *, chars: int = 600, seconds: float = 4.0) -> None:
        self._send = send
        self.chars = chars
        self.seconds = seconds
        self._buffer = ""
        self._lock = asyncio.Lock()  # one update at a time, in order
        self._timer: asyncio.TimerHandle | None = None
        self._timed: asyncio.Task[None] | None = None
        self.sent = ""  # everything handed to `send`
        self.updates = 0

    @property
    def pending(self) -> str:
        return self._buffer

    async def add(self, text: str) -> None:
        if not text:
            return
        self._buffer += text
        if self._due():
            await self.flush()
        elif self._timer is None and self._timed is None:
            self._timer = asyncio.get_running_loop().call_later(self.seconds, self._time_up)

    def _due(self) -> bool:
        if not self.sent:
            return bool(self._buffer.strip())
        if len(self._buffer) < self.chars:
            return False
        return self._buffer.rstrip(" ").endswith(SENTENCE_END) or len(self._buffer) >= self.chars * 1.25

    def _time_up(self) -> None:
        self._timer = None
        self._timed = asyncio.ensure_future(self.flush())

    async def flush(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            if self._timed is asyncio.current_task():
                self._timed = None
            if not self._buffer:
                return
            text, self._buffer = self._buffer, ""
            self.updates += 1
            self.sent += text
            await self._send(text)

    async def close(self) -> str:
        """No more text: stop the timer, let an update in flight finish, return the unsent rest."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._timed is not None:
            await asyncio.gather(self._timed, return_exceptions=True)
            self._timed = None
        async with self._lock:
            text, self._buffer = self._buffer, ""
            self.sent += text
            return text
