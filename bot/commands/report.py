"""`askdesk report [--since 7d] [--html FILE] [--json]`: the knowledge-gap report (agent/report/)
from the deployment's state store, which a running bot shares, so it runs beside `askdesk serve`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Optional

import typer

from agent.config import load_settings


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)


async def make_report(since_text: str):
    from agent.knowledge.embedders import make_embedder
    from agent.report import build_report, parse_since, query_embed
    from agent.state import open_state

    settings = load_settings()
    since = parse_since(since_text)
    state = open_state(settings)
    embedder = None

    async def embed(texts: list[str]) -> list[list[float]]:
        nonlocal embedder
        embedder = embedder or make_embedder(settings.embedder)  # loaded only when there is text to group
        return await query_embed(embedder)(texts)

    try:
        return await build_report(state, since, embed=embed)
    finally:
        await state.close()


async def forget(before_text: str) -> dict[str, int]:
    from agent.report import parse_since
    from agent.state import open_state

    try:
        before = parse_since(before_text)
    except ValueError as exc:
        raise ValueError(str(exc).replace("--since", "--forget-before")) from None
    state = open_state(load_settings())
    try:
        return await state.forget_before(before)
    finally:
        await state.close()


def run(work):
    """`work`'s result; a bad date (exit 2) or an unreachable store (exit 1) is one line."""
    from agent.state import StateUnavailable

    try:
        return asyncio.run(work)
    except ValueError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except StateUnavailable as exc:
        typer.echo(f"error: the state store is unavailable: {exc}", err=True)
        raise typer.Exit(1) from None


def report_cmd(
    since: str = typer.Option("7d", "--since", help="Period: 7d, 24h, 2w, or a date (UTC) such as 2026-01-31."),
    forget_before: Optional[str] = typer.Option(
        None, "--forget-before", help="Instead of reporting: delete conversations, turns, feedback and escalations "
        "older than this date (UTC, 2026-01-31) or age (90d)."),
    html: Optional[Path] = typer.Option(None, "--html", help="Also write the report with charts to this HTML file."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Knowledge-gap report: questions, outcomes, feedback, escalations, most-cited documents, and
    the unanswered and down-voted questions grouped by meaning."""
    from agent.report.text import lines
    from bot.commands import writable_target

    if html is not None:
        writable_target(html)
    if forget_before is not None:
        deleted = run(forget(forget_before))
        typer.echo("forgot " + ", ".join(f"{n} {table}" for table, n in deleted.items()))
        return
    report = run(make_report(since))
    if html is not None:
        from agent.report.page import render

        try:
            html.write_text(render(report), encoding="utf-8")
        except OSError as exc:
            typer.echo(f"error: cannot write {html}: {exc.strerror or exc}", err=True)
            raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps(report.as_dict(), ensure_ascii=False, indent=2))
    else:
        for line in lines(report):
            typer.echo(line)
        if html is not None:
            typer.echo(f"\nwrote {html}")
