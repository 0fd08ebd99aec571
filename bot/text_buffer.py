"""Batches streamed answer text into few surface updates.

A chat surface pays per update (Slack's append calls are rate limited; Teams throttles
its stream), while the model sends a few characters at a time. The buffer sends the
first text at once (the user sees the answer start as soon as the model does), then
waits until `chars` characters are buffered — flushed at a sentence end when one comes
within a quarter more, else anyway — or until `seconds` passed since the last update and
the text rests at a sentence end. Whatever is left goes with the surface's closing call.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

SENTENCE_END = (".", "!", "?", ":", "\n", "…")


class TextBuffer:
    def __init__(self, send: Callable[[str], Awaitable[None]], *, chars: int = 600, seconds: float = 4.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._send = send
        self.chars = chars
        self.seconds = seconds
        self._clock = clock
        self._buffer = ""
        self._last = 0.0
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

    def _due(self) -> bool:
        if not self.sent:
            return bool(self._buffer.strip())
        at_sentence_end = self._buffer.rstrip(" ").endswith(SENTENCE_END)
        if len(self._buffer) >= self.chars:
            return at_sentence_end or len(self._buffer) >= self.chars * 1.25
        return at_sentence_end and self._clock() - self._last >= self.seconds

    async def flush(self) -> None:
        if not self._buffer:
            return
        text, self._buffer = self._buffer, ""
        self._last = self._clock()
        self.updates += 1
        self.sent += text
        await self._send(text)

    def take(self) -> str:
        """The unsent rest, for the surface's closing call (which sends it itself)."""
        text, self._buffer = self._buffer, ""
        self.sent += text
        return text
