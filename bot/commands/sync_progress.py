"""The progress bar `askdesk sync` draws on a terminal (rich; nothing when output is piped)."""

from __future__ import annotations

from typing import Any

from agent.sources.sync import SyncProgress


class TerminalProgress(SyncProgress):
    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(stderr=True)
        self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                             console=console, transient=True, disable=not console.is_terminal)
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> "TerminalProgress":
        self._bar.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._bar.stop()

    def listed(self, source: str, to_read: int) -> None:
        self._tasks[source] = self._bar.add_task(f"syncing {source}", total=max(to_read, 1) if to_read else 1,
                                                 completed=0 if to_read else 1)

    def done(self, source: str, n: int = 1) -> None:
        if source in self._tasks:
            self._bar.advance(self._tasks[source], n)
