"""`askdesk learned list|confirm|review|remove`: the answers experts saved with "Save as answer"
(or admins wrote in the console), and their review dates.

They are Markdown files in the managed folder (`ASKDESK_LEARNED_DIR`, default
`<data_dir>/learned`), ingested like any document, each cited until its review date (saved or
last confirmed + ASKDESK_LEARNED_REVIEW_DAYS). `confirm` starts a new review period (and brings an
expired answer back into the index), `review` takes the answers past their date out of it (what
`askdesk serve` does every hour, with the owners' reminders), `remove` deletes the file and its
chunks through the same code path `askdesk ingest --prune` uses for a file that is gone. While
`askdesk serve` holds the store, the running bot does the work (bot/admin/).
"""

from __future__ import annotations

import json

import typer

from agent.config import load_settings
from agent.store import StoreInUse
from bot.commands import emit, hand_over, run_with_runtime

learned_app = typer.Typer(help="Answers saved from experts' replies (\"Save as answer\") and their review dates.",
                          no_args_is_help=True)


@learned_app.command("list")
def list_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON: name, question, expert, date, "
                                                                  "owner, status, review_by.")) -> None:
    """List the learned answers: file name, date, who answered, the question, its status (current, due,
    expired), review date and owner."""
    from agent.clock import SystemClock
    from agent.knowledge.learned import listed
    from bot.printable import printable

    settings = load_settings()
    now = SystemClock().now()
    answers = listed(settings.learned_path)
    rows = [(a, a.status(now, settings.learned_review_days, settings.learned_remind_days),
             a.review_by(settings.learned_review_days)) for a in answers]
    if as_json:
        typer.echo(json.dumps([a.model_dump(mode="json", exclude={"answer"}) | {"status": status,
                                                                                "review_by": f"{review:%Y-%m-%d}"}
                               for a, status, review in rows], indent=2, ensure_ascii=False))
        return
    if not answers:
        typer.echo("no learned answers yet")
        return
    for a, status, review in rows:
        owner = f", owner {a.owner.name or a.owner.id} on {a.owner.surface}" if a.owner else ""
        typer.echo(printable(f"{a.name}  {a.date}  {a.expert}  {a.question}  ({status}, review by {review:%Y-%m-%d}{owner})"))


@learned_app.command("confirm")
def confirm_cmd(name: str = typer.Argument(..., help="The learned answer's file name (see `askdesk learned list`).")) -> None:
    """Still right: cite it (again) until a new review date."""
    from bot.admin.jobs import learned_confirm
    from bot.admin.protocol import JobRequest

    try:
        output = run_with_runtime(lambda runtime: learned_confirm(runtime, name))
    except StoreInUse as exc:
        output = hand_over(JobRequest(op="learned-confirm", paths=[name]), exc)
    emit(output)


@learned_app.command("review")
def review_cmd() -> None:
    """Stop citing the answers past their review date (`askdesk serve` does this every hour and
    also messages their owners)."""
    from bot.admin.jobs import learned_expire
    from bot.admin.protocol import JobRequest

    try:
        output = run_with_runtime(learned_expire)
    except StoreInUse as exc:
        output = hand_over(JobRequest(op="learned-expire"), exc)
    emit(output)


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
