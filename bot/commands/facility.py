"""`askdesk ingest-facilities FILE.csv` and `askdesk facility "text" [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agent.store import StoreInUse
from bot.commands import emit, hand_over, run_with_runtime


def ingest_facilities_cmd(
    file: Path = typer.Argument(..., help="Facility registry CSV (column mapping: the facilities_columns setting)."),
    collection: str = typer.Option(None, "--collection", help="Target collection (default: facilities_collection)."),
) -> None:
    """Load a facility registry CSV into its collection (idempotent; bad rows are reported and skipped)."""
    from agent.facilities.ingest import ingest_facilities
    from agent.facilities.registry import RegistryFormatError

    if not file.is_file():
        typer.echo(f"error: {file} is not a file", err=True)
        raise typer.Exit(2)
    try:
        report = run_with_runtime(lambda rt: ingest_facilities(rt, file, collection=collection))
    except RegistryFormatError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except StoreInUse as exc:  # `askdesk serve` holds the store: it runs the job
        from bot.admin.protocol import JobRequest

        emit(hand_over(JobRequest(op="ingest-facilities", paths=[str(file.resolve())], collection=collection), exc))
        return
    emit(facilities_output(report))


def facilities_output(report):
    """What `askdesk ingest-facilities` prints, locally or handed over to a running bot."""
    from bot.admin.protocol import JobOutput

    return JobOutput(stdout=[report.summary()], code=1 if report.loaded == 0 else 0)


def facility_cmd(
    text: list[str] = typer.Argument(None, help='What to find, e.g. "infant care near 78702".'),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: interpretation and facilities."),
    collection: str = typer.Option(None, "--collection", help="Facility collection (default: facilities_collection)."),
) -> None:
    """Search the facility registry the way the Slack /facility command does (no model needed; with
    a router model configured, words the parser cannot place get one extraction call)."""
    from agent.facilities.command import run_facility_command
    from agent.providers.chain import ModelChain

    query = " ".join(text or [])

    async def run(rt):
        model = ModelChain.for_router(rt.settings)
        try:
            return await run_facility_command(rt, query, collection=collection,
                                              model=model if model.configured else None)
        finally:
            await model.aclose()

    result = run_with_runtime(run)
    if as_json:
        typer.echo(json.dumps(result.to_json(), indent=2, ensure_ascii=False))
    else:
        typer.echo(result.reply)


def register(app: typer.Typer) -> None:
    app.command("ingest-facilities")(ingest_facilities_cmd)
    app.command("facility")(facility_cmd)
