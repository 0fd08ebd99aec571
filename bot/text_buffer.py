"""Paces streamed answer text into a steady flow of surface updates.

A chat surface pays per update (Slack rate-limits chat.appendStream; Teams throttles a
stream to about one update a second), while the model sends a few characters at a time.
The buffer sends the first text at once (the user sees the answer start as soon as the
model does), then at most one update every `seconds`: when that time has passed since the
previous update began, whatever the model wrote meanwhile goes out — cut at the last
sentence end when one is near the end of it, else after the last whole word, so a word is
never split while a boundary is near (the unfinished word rides on the next update). Text
with no boundary at all (one very long word) waits at most `hold` seconds more, then goes
out as it is. So while the model writes, the surface shows new text about every `seconds`,
never faster. `close()` returns whatever is left for the surface's closing call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

SENTENCE_END = (".", "!", "?", ":", "\n", "…")
NEAR = 0.25  # a sentence end within the last quarter of the waiting text is "near the end"
HOLD_STEP = 0.1  # how often a text with no word boundary yet is looked at again


def cut_point(text: str) -> int:
    """Where to cut `text` for an update: after a sentence end near its end, else after its
    last whole word (the whitespace that follows it), else 0 (no boundary in it)."""
    if text.endswith((".", "!", "?", "\n", "…")):  # it ends where a sentence does
        return len(text)
    words = max(text.rfind(" "), text.rfind("\n"), text.rfind("\t"))
    if words < 0:
        return 0
    near = len(text) - max(int(len(text) * NEAR), 1)
    for i in range(words, max(near, 0) - 1, -1):  # the last sentence end followed by a space
        if text[i].isspace() and i and text[i - 1] in SENTENCE_END:
            return i + 1
    return words + 1


class TextBuffer:
    def __init__(self, send: Callable[[str], Awaitable[None]], *, seconds: float = 1.0,
                 hold: float | None = None) -> None:
        self._send = send
        self.seconds = seconds  # the least time between the starts of two updates
        # the longest a text with no word boundary is held back past its turn (0.4 s of each second)
        self.hold = seconds * 0.4 if hold is None else hold
        self._buffer = ""
        self._lock = asyncio.Lock()  # one update at a time, in order
        self._timer: asyncio.TimerHandle | None = None
        self._timed: asyncio.Task[None] | None = None
        self._last: float | None = None  # loop time the previous update began
        self._held_since: float | None = None  # when a text with no boundary was first held back
        self.sent = ""  # everything handed to `send`
        self.updates = 0

    @property
    def pending(self) -> str:
        return self._buffer

    async def add(self, text: str) -> None:
        if not text:
            return
        self._buffer += text
        if not self.sent:
            if self._buffer.strip():  # the first text at once; whitespace alone is not worth an update
                await self.flush()
            return
        self._arm()

    def _arm(self, delay: float | None = None) -> None:
        if self._timer is not None or self._timed is not None or not self._buffer:
            return
        loop = asyncio.get_running_loop()
        if delay is None:
            delay = (self._last or 0.0) + self.seconds - loop.time()
        self._timer = loop.call_later(max(delay, 0.0), self._time_up)

    def _time_up(self) -> None:
        self._timer = None
        self._timed = asyncio.ensure_future(self._due())

    async def _due(self) -> None:
        """The update's turn: send the waiting text up to a boundary."""
        try:
            async with self._lock:
                if not self._buffer:
                    return
                loop = asyncio.get_running_loop()
                cut = cut_point(self._buffer)
                if not self._buffer[:cut].strip():  # nothing but whitespace before the boundary
                    cut = 0
                if not cut:  # one unfinished word: wait a little for its end, not forever
                    if self._held_since is None:
                        self._held_since = loop.time()
                    if loop.time() - self._held_since < self.hold:
                        self._timed = None
                        self._arm(min(HOLD_STEP, self.hold))
                        return
                    cut = len(self._buffer)
                self._held_since = None
                await self._send_now(self._buffer[:cut], keep=self._buffer[cut:])
        finally:
            if self._timed is asyncio.current_task():
                self._timed = None
                self._arm()  # what the model wrote meanwhile (or the held-back word) has its turn next

    async def _send_now(self, text: str, keep: str = "") -> None:
        self._buffer = keep
        self._last = asyncio.get_running_loop().time()
        self.updates += 1
        self.sent += text
        await self._send(text)

    async def flush(self) -> None:
        """Send everything waiting now (the first text; a surface that must show it at once)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            if not self._buffer:
                return
            self._held_since = None
            await self._send_now(self._buffer)

    async def close(self) -> str:
        """No more text: stop the timer, let an update in flight finish, return the unsent rest."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._timed is not None:
            timed, self._timed = self._timed, None
            await asyncio.gather(timed, return_exceptions=True)
        if self._timer is not None:  # re-armed by the update that just finished
            self._timer.cancel()
            self._timer = None
        async with self._lock:
            text, self._buffer = self._buffer, ""
            self.sent += text
            return text
