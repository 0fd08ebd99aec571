"""`askdesk` command line: each command group lives in its own bot/commands module."""

from __future__ import annotations

import sys

import typer

from agent.store import StoreInUse
from bot.commands import EXIT_IN_USE, chat, evaluate, facility, knowledge, learned, registry, report, serve, sources, teams

app = typer.Typer(
    name="askdesk",
    help="askdesk: answers staff questions from your documents and data.",
    no_args_is_help=True,
    add_completion=False,
)

for module in (knowledge, facility, registry, chat, evaluate, report, serve, teams, learned, sources):
    module.register(app)


def main() -> None:
    try:
        app()
    except StoreInUse as exc:  # any command, whatever its own error handling: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_IN_USE)
