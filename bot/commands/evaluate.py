"""`askdesk eval FILE [--json] [--top-k 5]`: score the build against an eval YAML file;
`askdesk eval --regressions [--json]`: the regression cases feedback became
(agent/evaluation/regressions.py), each found or not in the top 5."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Optional

import typer

from agent.config import load_settings
from agent.runtime import Runtime
from agent.store import StoreInUse
from bot.commands import existing, store_in_use


def eval_cmd(
    file: Optional[Path] = typer.Argument(None, help="Eval YAML (sections: retrieval, offtopic, conversations, routes, one per registry)."),
    regressions: bool = typer.Option(False, "--regressions", help="Run the regression cases of the data dir "
                                     "(expert answers kept as tests) instead of a file."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object keyed by section."),
    top_k: int = typer.Option(5, "--top-k", min=1, max=50, help="Passages per question."),
) -> None:
    """Run every section of FILE this build supports; others are reported as skipped."""
    from agent.evaluation import load_eval_file, render, run_eval
    from agent.knowledge.search import KnowledgeBaseUnavailable
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk

    if regressions:
        if file is not None:
            typer.echo("error: give an eval FILE or --regressions, not both", err=True)
            raise typer.Exit(2)
        run_regressions(as_json)
        return
    if file is None:
        typer.echo("error: give an eval FILE (or --regressions)", err=True)
        raise typer.Exit(2)
    existing(file, "file")
    try:
        load_eval_file(file)
    except Exception as exc:  # YAML syntax error, wrong top-level type
        typer.echo(f"error: cannot read {file}: {exc}", err=True)
        raise typer.Exit(2) from None

    async def main():
        settings = load_settings()
        runtime = Runtime.open(settings)
        service = Askdesk(settings, runtime, state=MemoryState())  # keeps nothing on disk
        try:
            results = await run_eval(file, service, top_k=top_k)
            return results, render(service, results)
        finally:
            await service.close()
            await runtime.close()

    try:
        results, rendered = asyncio.run(main())
    except KnowledgeBaseUnavailable as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from None
    except StoreInUse as exc:
        raise store_in_use(exc) from None
    except Exception as exc:
        typer.echo(f"error: evaluation failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None

    if as_json:
        typer.echo(json.dumps(results, indent=2, ensure_ascii=False, default=str))
        return
    for name, text in rendered.items():
        typer.echo(f"== {name}")
        typer.echo(text)
        typer.echo("")


def run_regressions(as_json: bool) -> None:
    """Every regression case searched as the bot searches; exit code 1 when one lost its source."""
    from agent.evaluation.regressions import check, load_cases, render, summary

    settings = load_settings()
    try:
        cases = load_cases(settings)
    except Exception as exc:  # a hand edit broke the file
        typer.echo(f"error: cannot read the regression cases: {exc}", err=True)
        raise typer.Exit(2) from None

    async def main():
        runtime = Runtime.open(settings)
        try:
            return await check(runtime, cases)
        finally:
            await runtime.close()

    try:
        results = asyncio.run(main()) if cases else []
    except StoreInUse as exc:
        raise store_in_use(exc) from None
    except Exception as exc:  # the knowledge base is missing or unreachable
        typer.echo(f"error: regression check failed: {type(exc).__name__}: {exc}", err=True)
        raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps({**summary(results), "results": [r.model_dump() for r in results]}, indent=2,
                              ensure_ascii=False))
    else:
        typer.echo(render(results))
    if any(not r.found for r in results):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
