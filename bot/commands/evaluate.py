"""`askdesk eval FILE [--json] [--top-k 5]`: score the build against an eval YAML file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import typer

from agent.config import load_settings
from agent.runtime import Runtime
from agent.store import StoreInUse
from bot.commands import existing, store_in_use


def eval_cmd(
    file: Path = typer.Argument(..., help="Eval YAML (sections: retrieval, offtopic, conversations, routes, one per registry)."),
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object keyed by section."),
    top_k: int = typer.Option(5, "--top-k", min=1, max=50, help="Passages per question."),
) -> None:
    """Run every section of FILE this build supports; others are reported as skipped."""
    from agent.evaluation import load_eval_file, render, run_eval
    from agent.knowledge.search import KnowledgeBaseUnavailable
    from agent.state.memory import MemoryState
    from agent.turn.service import Askdesk

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


def register(app: typer.Typer) -> None:
    app.command("eval")(eval_cmd)
