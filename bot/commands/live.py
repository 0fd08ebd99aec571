"""The terminal's streamed answer: Markdown re-rendered in place while the model writes it.

rich's `Live` redraws at most `REFRESH_PER_SECOND` times a second whatever the token rate
(the terminal's buffering); the first text is drawn at once. The final render stays on
screen, followed by the sources. On a console that is not a terminal (a pipe, a log),
rich draws only the final answer.
"""

from __future__ import annotations

from bot.printable import printable

import time

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

REFRESH_PER_SECOND = 12


class LiveAnswer:
    """`on_text` for Askdesk.answer: opens the live display on the first text."""

    def __init__(self, console: Console, header: str = "[bold blue]askdesk>[/bold blue]") -> None:
        self.console = console
        self.header = header
        self.text = ""
        self.first_at: float | None = None  # monotonic time the first answer text was drawn
        self._live: Live | None = None

    async def __call__(self, delta: str) -> None:
        self.text += delta
        if self._live is None:
            if self.header:
                self.console.print(self.header)
            self._live = Live(Markdown(printable(self.text, multiline=True)), console=self.console, refresh_per_second=REFRESH_PER_SECOND,
                              vertical_overflow="visible")
            self._live.start(refresh=True)
            self.first_at = time.monotonic()
        else:
            self._live.update(Markdown(printable(self.text, multiline=True)))

    def close(self, answer: str) -> bool:
        """Draw the final answer and leave it on screen; False when nothing streamed."""
        if self._live is None:
            return False
        self._live.update(Markdown(printable(answer, multiline=True)), refresh=True)
        self._live.stop()
        self._live = None
        return True
