"""The terminal's streamed answer: Markdown re-rendered in place while the model writes it.

rich's `Live` redraws at most `REFRESH_PER_SECOND` times a second whatever the token rate
(the terminal's buffering); the first text is drawn at once. The final render stays on
screen, followed by the sources. On a console that is not a terminal (a pipe, a file, a log)
nothing is drawn live: the final answer is printed once, as `print_markdown` prints any answer
there (its own lines, no padding to the console's width).
"""

from __future__ import annotations

from bot.printable import printable

import re
import time

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown

REFRESH_PER_SECOND = 12

_TRAILING_SPACE = re.compile(r"[ \t]+((?:\x1b\[[0-9;]*m)*)$", re.MULTILINE)


def print_markdown(console: Console, text: str) -> None:
    """`text` (already `printable`) as Markdown. On a terminal, as rich draws it; elsewhere
    (`askdesk ask > file`, a piped `chat`) the rendered lines without the spaces that pad
    them to the console's width, each ending with a newline, so the next block starts on a
    line of its own."""
    if console.is_terminal:
        console.print(Markdown(text))
        return
    with console.capture() as captured:
        console.print(Markdown(text))
    rendered = _TRAILING_SPACE.sub(r"\1", captured.get()).rstrip("\n")
    console.file.write(rendered + "\n")
    console.file.flush()


class LiveAnswer:
    """`on_text` for Askdesk.answer: opens the live display on the first text."""

    def __init__(self, console: Console, header: str = "[bold blue]askdesk>[/bold blue]") -> None:
        self.console = console
        self.header = header
        self.text = ""
        self.first_at: float | None = None  # monotonic time the first answer text was drawn
        self._live: Live | None = None
        self._held = False  # text came, not drawn: the console is not a terminal

    async def __call__(self, delta: str) -> None:
        self.text += delta
        if not self.console.is_terminal:  # nothing to redraw in a pipe or a file: `close` prints it
            if not self._held:
                self._held, self.first_at = True, time.monotonic()
            return
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
        if not self.console.is_terminal:
            if not self._held:
                return False
            self._held = False
            if self.header:
                self.console.print(self.header)
            print_markdown(self.console, printable(answer, multiline=True))
            return True
        if self._live is None:
            return False
        self._live.update(Markdown(printable(answer, multiline=True)), refresh=True)
        self._live.stop()
        self._live = None
        return True
