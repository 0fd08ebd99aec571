"""`askdesk ingest-facilities FILE.csv` and `askdesk facility "text" [--json]`: shortcuts for the
demo's registry, `askdesk registry ingest|search facility …`.

The registry is the deployment's declared `facility` registry, else the demo's declaration next
to the package (examples/texas-childcare/registries/facility.yaml, found as `askdesk demo` finds
its data), which `ingest-facilities` installs into the data dir.
"""

from __future__ import annotations

from pathlib import Path

import typer

from typing import TYPE_CHECKING

from agent.config import Settings, load_settings
from bot.commands import existing
from bot.commands.registry import find_declaration, ingest, install_declaration, search

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration

NAME = "facility"


def demo_declaration_path() -> Path:
    from bot.commands.chat import examples_dir

    return examples_dir() / "registries" / f"{NAME}.yaml"


def facility_declaration(settings: Settings) -> "Declaration":
    """The deployment's `facility` registry; else the demo's, installed into the data dir so
    that `askdesk serve`, `ask` and `facility` find it from now on."""
    from agent.registry.declaration import DeclarationError

    try:
        return find_declaration(settings, NAME)
    except DeclarationError:
        if not demo_declaration_path().is_file():
            raise
        return install_declaration(settings, NAME, demo_declaration_path())


def ingest_facilities_cmd(
    file: Path = typer.Argument(..., help="Facility registry CSV (columns: the registry's declaration)."),
    collection: str = typer.Option(None, "--collection", help="Target collection (default: the declaration's)."),
) -> None:
    """Load the facility registry's CSV into its collection (idempotent; bad rows are reported and skipped)."""
    from agent.registry.declaration import DeclarationError
    from bot.admin.protocol import JobRequest

    existing(file, "file")
    try:
        decl = facility_declaration(load_settings())
    except DeclarationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    request = JobRequest(op="registry-ingest", registry=NAME, paths=[str(file.resolve())], collection=collection,
                         declaration=str(Path(decl.path).resolve()) if decl.path else None)
    ingest(decl, file, collection, request)


def facility_cmd(
    text: list[str] = typer.Argument(None, help='What to find, e.g. "infant care near 78702".'),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: interpretation and facilities."),
) -> None:
    """Search the facility registry the way the Slack /facility command does (no model needed; with
    a router model configured, words the parser cannot place get one extraction call)."""
    from agent.registry.declaration import DeclarationError

    not_loaded = ("the facility registry is not loaded here: run askdesk ingest-facilities FILE.csv "
                  "(the demo's: examples/texas-childcare/facilities.csv)")
    try:
        find_declaration(load_settings(), NAME)
    except DeclarationError:
        typer.echo(f"error: {not_loaded}", err=True)
        raise typer.Exit(1) from None
    search(NAME, " ".join(text or []), as_json=as_json, not_loaded=not_loaded)


def register(app: typer.Typer) -> None:
    app.command("ingest-facilities")(ingest_facilities_cmd)
    app.command("facility")(facility_cmd)
