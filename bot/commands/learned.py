"""`askdesk learned list|remove`: the answers experts saved with "Save as answer".

They are Markdown files in the managed folder (`ASKDESK_LEARNED_DIR`, default
`<data_dir>/learned`), ingested like any document. `remove` deletes the file and its chunks
through the same code path `askdesk ingest --prune` uses for a file that is gone; while
`askdesk serve` holds the store, the running bot does it (bot/admin/).
"""

from __future__ import annotations

import json

import typer

from agent.config import load_settings
from agent.store import StoreInUse
from bot.commands import emit, hand_over, run_with_runtime

learned_app = typer.Typer(help="Answers saved from experts' replies (\"Save as answer\").", no_args_is_help=True)


@learned_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON: name, question, expert, date.")) -> None:
    """List the learned answers: file name, date, who answered, the question."""
    from agent.knowledge.learned import listed
    from bot.printable import printable

    answers = listed(load_settings().learned_path)
    if as_json:
        typer.echo(json.dumps([a.__dict__ for a in answers], indent=2, ensure_ascii=False))
        return
    if not answers:
        typer.echo("no learned answers yet")
        return
    for a in answers:
        typer.echo(printable(f"{a.name}  {a.date}  {a.expert}  {a.question}"))


@learned_app.command("remove")
def remove_cmd(name: str = typer.Argument(..., help="The learned answer's file name (see `askdesk learned list`).")) -> None:
    """Delete a learned answer: its file and its passages in the knowledge base."""
    from bot.admin.jobs import learned_remove
    from bot.admin.protocol import JobRequest

    try:
        output = run_with_runtime(lambda runtime: learned_remove(runtime, name))
    except StoreInUse as exc:  # `askdesk serve` holds the store: it removes it
        output = hand_over(JobRequest(op="learned-remove", paths=[name]), exc)
    emit(output)


def register(app: typer.Typer) -> None:
    app.add_typer(learned_app, name="learned")
