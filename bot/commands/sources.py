"""`askdesk sync`, `askdesk sources` and `askdesk plugins`: the knowledge sources declared in
sources.yaml (docs/sources.md), kept in sync, and the plug-ins that provide their kinds."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import typer

from agent.config import load_settings
from bot.commands import run_with_runtime

if TYPE_CHECKING:
    from agent.config import Settings


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise SystemExit(2)


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if ts else "never"


def sync_cmd(
    names: list[str] = typer.Argument(None, help="Sources to sync (default: all in sources.yaml)."),
    full: bool = typer.Option(False, "--full", help="List everything again instead of the changes since the last sync."),
    as_json: bool = typer.Option(False, "--json", help="Print each source's report as JSON."),
) -> None:
    """Bring the knowledge base in line with the declared sources (incremental after the first run).
    While `askdesk serve` holds the store, the running bot does it."""
    from agent.sources.base import SourceError
    from agent.sources.config import SourcesFileError
    from agent.sources.sync import sync_all
    from agent.store import StoreInUse
    from bot.admin.jobs import sync_job
    from bot.admin.protocol import JobOutput, JobRequest
    from bot.commands import emit, hand_over
    from bot.commands.sync_progress import TerminalProgress

    async def local(runtime) -> JobOutput:  # noqa: ANN001
        if as_json:
            return await sync_job(runtime, names or [], full=full, as_json=True)
        with TerminalProgress() as progress:  # the same job, with a bar on a terminal
            try:
                reports = await sync_all(runtime, names or None, full=full, progress=progress)
            except (SourcesFileError, SourceError) as exc:
                return JobOutput(stderr=[f"error: {exc}"], code=2)
        stdout = [r.summary() for r in reports] or ["no sources declared: see docs/sources.md (sources.yaml)"]
        stdout += [f"  unreadable: {d}: {why}" for r in reports for d, why in r.failed[:10]]
        return JobOutput(stdout=stdout, code=1 if any(r.error for r in reports) else 0)

    try:
        output = run_with_runtime(local)
    except StoreInUse as exc:
        output = hand_over(JobRequest(op="sync", paths=names or [], full=full, as_json=as_json), exc)
    emit(output)


def source_rows(settings: "Settings | None" = None) -> list[dict[str, Any]]:
    """Each declared source with its state: kind, audience, documents, last and next sync, last error
    (`settings`: a running process's, such as the console's; default: read them now)."""
    from agent.sources.config import load_sources
    from agent.sources.state import SyncState

    settings = settings or load_settings()
    sources = load_sources(settings)
    state = SyncState(settings.data_dir / "sources.sqlite")
    try:
        rows = []
        for source in sources:
            row = state.source(source.name)
            interval = (source.config.interval_minutes or settings.sync_interval) * 60
            last = row.last_sync if row else None
            rows.append({
                "name": source.name, "kind": source.kind, "audience": source.config.audience,
                "documents": state.count(source.name), "last_sync": last,
                "next_sync": (last + interval if last else time.time()) if interval else None,
                "last_error": row.last_error if row else None,
                "unreadable": sum(1 for d in state.documents(source.name).values() if d.error),
            })
        return rows
    finally:
        state.close()


def sources_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The declared sources: kind, audience, documents, last sync, next sync and last error."""
    from agent.sources.config import SourcesFileError

    try:
        rows = source_rows()
    except SourcesFileError as exc:
        _fail(str(exc))
        return
    note = _languages_note()
    if as_json:
        typer.echo(json.dumps(rows, indent=2, ensure_ascii=False))
        if note:
            typer.echo(note, err=True)  # the JSON stays parseable
        return
    if not rows:
        typer.echo("no sources declared: see docs/sources.md (sources.yaml)")
    if note:
        typer.echo(note)
    for r in rows:
        audience = r["audience"] if isinstance(r["audience"], str) else ", ".join(r["audience"])
        typer.echo(f"{r['name']}  {r['kind']}  audience: {audience}  {r['documents']} documents  "
                   f"last sync: {_when(r['last_sync'])}  next: {_when(r['next_sync']) if r['next_sync'] else 'manual'}")
        if r["last_error"]:
            typer.echo(f"  last error: {r['last_error']}")
        if r["unreadable"]:
            typer.echo(f"  {r['unreadable']} documents could not be read (askdesk sync --json lists them)")


def _languages_note() -> str | None:
    """The one line about documents in a language askdesk has no translations for (or None)."""
    from agent.knowledge import kb_languages

    settings = load_settings()
    return kb_languages.note(kb_languages.held(settings), kb_languages.spoken(settings))


def plugins_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON.")) -> None:
    """The plug-ins loaded from the `askdesk.plugins` entry points: kind, name, package, version, missing settings."""
    from agent.plugins import plugins

    loaded = plugins()
    rows = [{"kind": x.kind, "name": x.name, "plugin": x.plugin, "package": x.package, "version": x.version,
             "settings": list(x.settings), "missing": list(x.missing)}
            for x in sorted(loaded.loaded, key=lambda x: (x.kind, x.name))]
    broken = [{"plugin": p, "package": pkg, "error": err} for p, pkg, err in loaded.failed]
    if as_json:
        typer.echo(json.dumps({"loaded": rows, "failed": broken}, indent=2, ensure_ascii=False))
        return
    for r in rows:
        missing = f"  missing: {', '.join(r['missing'])}" if r["missing"] else ""
        typer.echo(f"{r['kind']:<10} {r['name']:<14} {r['package']} {r['version']}{missing}")
    for b in broken:
        typer.echo(f"failed     {b['plugin']:<14} {b['package']}: {b['error']}")


def register(app: typer.Typer) -> None:
    app.command("sync")(sync_cmd)
    app.command("sources")(sources_cmd)
    app.command("plugins")(plugins_cmd)
