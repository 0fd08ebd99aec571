"""`askdesk` command line: each command group lives in its own bot/commands module."""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="askdesk",
    help="askdesk: answers staff questions from your documents and data.",
    no_args_is_help=True,
    add_completion=False,
)

# Each module exposes register(app: typer.Typer).
COMMAND_MODULES = ["knowledge", "facility", "chat", "serve", "evaluate"]


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"bot.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"bot.commands.{name}":
                raise
            continue
        module.register(app)


_register_all()


def main() -> None:
    app()
