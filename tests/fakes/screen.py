"""A fake terminal: what the chat UI wrote, and when (terminal streaming tests and bench)."""

from __future__ import annotations

import io
import time


class Screen(io.StringIO):
    """A terminal that remembers when each piece of text was written."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[tuple[float, str]] = []

    def write(self, text: str) -> int:
        self.writes.append((time.monotonic(), text))
        return super().write(text)

    def first(self, needle: str) -> float:
        """When text containing `needle` was first written."""
        return next(at for at, text in self.writes if needle in text)
