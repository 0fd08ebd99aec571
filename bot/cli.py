"""`askdesk` command line: each command group lives in its own bot/commands module.

Every command follows the same conventions, so scripts and people can rely on them: `-h` and
`--help`, `askdesk --version`, plain help in which a flag reads as a flag (`--json`, not
`--json <bool>`), and a bad argument or path is ONE `error: …` line on stderr with exit code 2
— typer's own usage errors included, which would otherwise print a usage block in a rich box.
Libraries' warnings meant for their developers are filtered here, at the entry point.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Sequence
from typing import Any

import typer
from typer.core import TyperGroup

from agent.store import StoreInUse
from bot.commands import EXIT_IN_USE, EXIT_USAGE, chat, evaluate, facility, knowledge, learned, mcp, registry, report, serve, sources, teams

try:  # typer >= 0.20 carries its own copy of click
    from typer._click.exceptions import ClickException, UsageError
except ImportError:  # pragma: no cover - older typer, on click
    from click.exceptions import ClickException, UsageError

# (category, module the warning is raised from, message): libraries' notes to their own
# developers, never actionable by whoever runs askdesk. Narrow on purpose: askdesk's own
# warnings and everything else still show, and -W / PYTHONWARNINGS replace these filters.
THIRD_PARTY_WARNINGS: tuple[tuple[type[Warning], str, str], ...] = (
    # the Teams SDK's ExperimentalWarning (a FutureWarning) about its own preview APIs, e.g.
    # "HtmlWidgetSecurityPolicy is in preview and may change in the future", raised on import
    (FutureWarning, r"microsoft_teams(\.|$)", ""),
    # the same warning when askdesk's code touches a preview API (the SDK words them all so)
    (FutureWarning, "", r".* is in preview and may change in the future\. Diagnostic: ExperimentalTeams"),
    # its deprecated BotClient, which the SDK's own ApiClient still builds; skip_auth renamed
    (DeprecationWarning, r"microsoft_teams(\.|$)", ""),
    (UserWarning, r"microsoft_teams(\.|$)", ""),
    # aiohttp's "Inheritance class AiohttpClientSession from ClientSession is discouraged",
    # raised where google-genai defines that class
    (DeprecationWarning, r"google\.genai(\.|$)", ""),
    # slack_sdk's "The top-level `text` argument is missing…": askdesk sets text where Slack reads it
    (UserWarning, r"slack_sdk(\.|$)", r"The top-level `text` argument is missing"),
    (DeprecationWarning, r"slack_(sdk|bolt)(\.|$)", ""),
    # qdrant-client cannot read a server's version (a proxy in front, an older server)
    (UserWarning, r"qdrant_client(\.|$)", r"Failed to obtain server version"),
)


def quiet_warnings() -> None:
    """Filter THIRD_PARTY_WARNINGS, unless the user chose warning filters (-W, PYTHONWARNINGS)."""
    if sys.warnoptions:
        return
    for category, module, message in THIRD_PARTY_WARNINGS:
        warnings.filterwarnings("ignore", message=message, category=category, module=module)


def one_line(message: str) -> str:
    """A message on one line, lower-case first and without a closing period, like askdesk's own."""
    text = " ".join(message.split()).rstrip(".")
    if len(text) > 1 and text[0].isupper() and text[1].islower():
        text = text[0].lower() + text[1:]
    return text


def _version(value: bool) -> None:
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("askdesk")
        except PackageNotFoundError:  # run from a checkout that was never installed
            found = "unknown (not installed)"
        typer.echo(f"askdesk {found}")
        raise typer.Exit()


class AskdeskGroup(TyperGroup):
    """The top-level command: typer runs it without its standalone error printing, and a usage
    error becomes one `error: …` line (exit 2). `askdesk` alone, like `askdesk serve` alone,
    still prints its help."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None,
             complete_var: str | None = None, standalone_mode: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        try:
            code = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except UsageError as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # no arguments: the help, as click shows it
                exc.show()
                sys.exit(EXIT_USAGE)
            hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx is not None else ""
            typer.echo(f"error: {one_line(exc.format_message())}{hint}", err=True)
            sys.exit(EXIT_USAGE)
        except ClickException as exc:
            typer.echo(f"error: {one_line(exc.format_message())}", err=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            typer.echo("aborted", err=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


app = typer.Typer(
    name="askdesk",
    cls=AskdeskGroup,
    help="askdesk: answers staff questions from your documents and data.",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,  # plain help: flags read as flags, no boxes around errors
    context_settings={"help_option_names": ["-h", "--help"]},  # inherited by every command
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                 help="Print askdesk's version and exit."),
) -> None:
    pass


for module in (knowledge, facility, registry, chat, evaluate, report, serve, teams, learned, sources, mcp):
    module.register(app)


def main() -> None:
    quiet_warnings()
    try:
        app()
    except StoreInUse as exc:  # any command, whatever its own error handling: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(EXIT_IN_USE)
    except ValueError as exc:  # a prompt or a setting that cannot be said (checked at start-up): one line
        from agent.prompts import PromptError
        from agent.understanding.identity import CapabilitiesError

        if not isinstance(exc, (PromptError, CapabilitiesError)):
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(1)
