"""`askdesk registry list|ingest|search`: the registries declared in YAML (docs/registries.md).

`registry ingest NAME FILE.csv --declaration FILE.yaml` copies the declaration into
`<data_dir>/registries/NAME.yaml`, so later commands and `askdesk serve` find it; while
`askdesk serve` holds the store, the ingest is handed to it (bot/admin).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from agent.config import Settings, load_settings
from agent.store import StoreInUse
from bot.admin.jobs import ingest_registry, registry_output
from bot.commands import emit, existing, hand_over, run_with_runtime
from bot.printable import json_safe, printable

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration
    from bot.admin.protocol import JobRequest


def find_declaration(settings: Settings, name: str) -> "Declaration":
    """The deployment's registry `name` (the registry engine is imported only when a command needs it)."""
    from agent.registry.loader import find_declaration as find

    return find(settings, name)

registry_app = typer.Typer(name="registry", no_args_is_help=True, add_completion=False,
                           help="Registries declared in YAML (offices, equipment, contacts…): list, load from CSV, search.")


def _fail(message: str, code: int = 2) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def install_declaration(settings: Settings, name: str, source: Path) -> "Declaration":
    """Copy `source` to `<data_dir>/registries/NAME.yaml` (nothing when it is already there) and
    check the deployment still loads; a declaration that does not fit is not kept."""
    from agent.registry.declaration import DeclarationError, load_declaration
    from agent.registry.loader import registries_dir

    decl = load_declaration(source)
    if decl.name != name:
        raise DeclarationError(f"{source}: declares registry '{decl.name}', not '{name}'")
    target = registries_dir(settings) / f"{name}.yaml"
    text = Path(source).read_text(encoding="utf-8")
    before = target.read_text(encoding="utf-8") if target.is_file() else None
    if before != text:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    try:
        return find_declaration(settings, name)
    except DeclarationError:
        if before is None:
            target.unlink()
        else:
            target.write_text(before, encoding="utf-8")
        raise


def ingest(decl: "Declaration", file: Path, collection: str | None, request: "JobRequest") -> None:
    """Ingest locally, or hand `request` to the running bot that holds the store."""
    from agent.registry.records import RegistryFormatError

    existing(file, "file")
    try:
        report = run_with_runtime(lambda rt: ingest_registry(rt, decl, file, collection))
    except RegistryFormatError as exc:
        raise _fail(str(exc)) from None
    except StoreInUse as exc:  # `askdesk serve` holds the store: it runs the job
        emit(hand_over(request, exc))
        return
    emit(registry_output(report))


def search(name: str, text: str, *, as_json: bool, not_loaded: str | None = None) -> None:
    """Run registry `name`'s command through the service, as Slack and Teams do (a router model,
    when configured, reads the words the parser could not place: one call). A registry that is
    declared but not loaded is an error (exit 1; `not_loaded`, when given, says how to load it)."""
    from agent.turn.service import Askdesk

    async def run(rt):
        if not await rt.store.collection_exists(find_declaration(rt.settings, name).collection):
            return None
        service = Askdesk.create(rt.settings, rt)
        try:
            command = next(c for c in service.commands() if c.capability == name)
            result, _ = await service.command(command.name, text)
            return result
        finally:
            await service.close()

    result = run_with_runtime(run)
    if result is None:
        typer.echo(f"error: {not_loaded or f'the {name} registry is not loaded here: run askdesk registry ingest {name} FILE.csv'}",
                   err=True)
        raise typer.Exit(1)
    # record values come from a CSV: no raw control codes on the terminal either way
    typer.echo(json_safe(json.dumps(result.to_json(), indent=2, ensure_ascii=False)) if as_json
               else printable(result.reply, multiline=True))


@registry_app.command("list")
def list_cmd() -> None:
    """The declared registries: command, what they hold, their collection and records loaded."""
    from agent.registry.declaration import DeclarationError
    from agent.registry.loader import load_declarations

    settings = load_settings()
    try:
        declarations = load_declarations(settings)
    except DeclarationError as exc:
        raise _fail(str(exc)) from None
    if not declarations:
        typer.echo("No registry is declared. Declare one in YAML (docs/registries.md) and load it with:\n"
                   "  askdesk registry ingest NAME FILE.csv --declaration FILE.yaml")
        return

    async def counts(rt) -> dict[str, int | None]:
        return {d.name: (await rt.store.count(d.collection) if await rt.store.collection_exists(d.collection)
                         else None) for d in declarations}

    try:
        loaded = run_with_runtime(counts)
    except StoreInUse:
        loaded = {}
    for d in declarations:
        n = loaded.get(d.name)
        state = "in use by the running bot" if not loaded else "not loaded" if n is None else f"{n} records"
        typer.echo(f"{d.name}  /{d.command.name}  {d.title}  collection '{d.collection}': {state}  ({d.path})")


@registry_app.command("ingest")
def ingest_cmd(
    name: str = typer.Argument(..., help="The registry's name (its declaration's `name`)."),
    file: Path = typer.Argument(..., help="The registry's CSV."),
    declaration: Path = typer.Option(None, "--declaration", help="Its declaration (YAML), kept in the data dir."),
    collection: str = typer.Option(None, "--collection", help="Target collection (default: the declaration's)."),
) -> None:
    """Load a registry's CSV into its collection (idempotent; bad rows are reported and skipped)."""
    from agent.registry.declaration import DeclarationError
    from bot.admin.protocol import JobRequest

    existing(file, "file")
    if declaration is not None:
        existing(declaration, "file")
    settings = load_settings()
    try:
        decl = install_declaration(settings, name, declaration) if declaration else find_declaration(settings, name)
    except DeclarationError as exc:
        raise _fail(str(exc)) from None
    request = JobRequest(op="registry-ingest", registry=name, paths=[str(file.resolve())], collection=collection,
                         declaration=str(Path(decl.path).resolve()) if decl.path else None)
    ingest(decl, file, collection, request)


@registry_app.command("search")
def search_cmd(
    name: str = typer.Argument(..., help="The registry's name."),
    text: list[str] = typer.Argument(None, help='What to find, e.g. "parking near 78701".'),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: interpretation and records."),
) -> None:
    """Search a registry the way its Slack command does (no model needed)."""
    from agent.registry.declaration import DeclarationError

    try:
        find_declaration(load_settings(), name)
    except DeclarationError as exc:
        raise _fail(str(exc)) from None
    search(name, " ".join(text or []), as_json=as_json)


def register(app: typer.Typer) -> None:
    app.add_typer(registry_app, name="registry")

