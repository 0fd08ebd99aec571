"""`askdesk ingest-facilities FILE.csv` and `askdesk facility "text" [--json]`: shortcuts for the
demo's registry, `askdesk registry ingest|search facility …` with today's output.

The registry is the deployment's declared `facility` registry, else the demo's declaration next
to the package (examples/texas-childcare/registries/facility.yaml, found as `askdesk demo` finds
its data). The older `facilities_*` settings still adjust it (collection, state, radius, columns).
"""

from __future__ import annotations

from pathlib import Path

import typer

from typing import TYPE_CHECKING

from agent.config import Settings, load_settings
from bot.commands.registry import find_declaration, ingest, search

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration

NAME = "facility"


def demo_declaration_path() -> Path:
    from bot.commands.chat import examples_dir

    return examples_dir() / "registries" / f"{NAME}.yaml"


def _with_settings(decl: "Declaration", settings: Settings) -> "Declaration":
    """The `facilities_*` settings given explicitly, applied to the declaration."""
    from agent.registry.declaration import DeclarationError

    given = settings.model_fields_set
    update: dict = {}
    if "facilities_collection" in given:
        update["collection"] = settings.facilities_collection
    if "facilities_radius_miles" in given:
        update["radius_miles"] = settings.facilities_radius_miles
    if "facilities_state" in given and decl.gazetteer is not None:
        update["gazetteer"] = decl.gazetteer.model_copy(update={"state": settings.facilities_state, "states": []})
    if settings.facilities_columns:
        fields = dict(decl.fields)
        geo = decl.geo[0] if decl.geo else None
        for key, header in settings.facilities_columns.items():
            if key in fields and key != geo:
                fields[key] = fields[key].model_copy(update={"column": header})
            elif geo and key in ("latitude", "longitude"):
                fields[geo] = fields[geo].model_copy(update={key: header})
            else:
                raise DeclarationError(f"facilities_columns names unknown field {key!r}; known: {sorted(fields)}")
        update["fields"] = fields
    return decl.model_copy(update=update) if update else decl


def facility_declaration(settings: Settings) -> "Declaration":
    from agent.registry.declaration import DeclarationError, load_declaration

    try:
        decl = find_declaration(settings, NAME)
    except DeclarationError:
        if not demo_declaration_path().is_file():
            raise
        decl = load_declaration(demo_declaration_path())
    return _with_settings(decl, settings)


def ingest_facilities_cmd(
    file: Path = typer.Argument(..., help="Facility registry CSV (columns: the registry's declaration)."),
    collection: str = typer.Option(None, "--collection", help="Target collection (default: the declaration's)."),
) -> None:
    """Load the facility registry's CSV into its collection (idempotent; bad rows are reported and skipped)."""
    from agent.registry.declaration import DeclarationError
    from bot.admin.protocol import JobRequest

    if not file.is_file():
        typer.echo(f"error: {file} is not a file", err=True)
        raise typer.Exit(2)
    try:
        decl = facility_declaration(load_settings())
    except DeclarationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    request = JobRequest(op="ingest-facilities", registry=NAME, paths=[str(file.resolve())], collection=collection)
    ingest(decl, file, collection, request)


def facility_cmd(
    text: list[str] = typer.Argument(None, help='What to find, e.g. "infant care near 78702".'),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: interpretation and facilities."),
    collection: str = typer.Option(None, "--collection", help="Facility collection (default: the declaration's)."),
) -> None:
    """Search the facility registry the way the Slack /facility command does (no model needed; with
    a router model configured, words the parser cannot place get one extraction call)."""
    from agent.registry.declaration import DeclarationError

    try:
        decl = facility_declaration(load_settings())
    except DeclarationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    search(decl, " ".join(text or []), as_json=as_json, collection=collection)


async def run_job(runtime, request):
    """An `ingest-facilities` job handed over by the CLI: the same registry, on the server."""
    from agent.registry.declaration import DeclarationError
    from bot.admin.protocol import JobOutput
    from bot.commands.registry import run_job as run_registry_job

    try:
        declaration = facility_declaration(runtime.settings)
    except DeclarationError as exc:
        return JobOutput(stderr=[f"error: {exc}"], code=2)
    return await run_registry_job(runtime, request, declaration=declaration)


def register(app: typer.Typer) -> None:
    app.command("ingest-facilities")(ingest_facilities_cmd)
    app.command("facility")(facility_cmd)
