"""`askdesk` command line: each command group lives in its own bot/commands module."""

from __future__ import annotations

import typer

from bot.commands import chat, evaluate, facility, knowledge, serve, teams

app = typer.Typer(
    name="askdesk",
    help="askdesk: answers staff questions from your documents and data.",
    no_args_is_help=True,
    add_completion=False,
)

for module in (knowledge, facility, chat, evaluate, serve, teams):
    module.register(app)


def main() -> None:
    app()
