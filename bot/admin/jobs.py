"""The jobs a running server accepts, run on its own Runtime, and what they print: the same
code and output as a local run of the command (bot/commands/ calls these)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from bot.admin.protocol import Event, JobOutput, JobRequest
from bot.printable import json_safe, printable

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.admin")


class EventProgress:
    """IngestProgress hooks forwarded to the client as events."""

    def __init__(self, send: Callable[[Event], None]) -> None:
        self.send = send

    def files_found(self, total: int) -> None:
        self.send(Event(event="files_found", value=total))

    def chunks_found(self, total: int) -> None:
        self.send(Event(event="chunks_found", value=total))

    def file_done(self, source: str) -> None:
        self.send(Event(event="file_done", value=source))

    def chunks_done(self, n: int) -> None:
        self.send(Event(event="chunks_done", value=n))


async def run_job(runtime: "Runtime", request: JobRequest, send: Callable[[Event], None]) -> JobOutput:
    if request.op == "ingest":
        from agent.knowledge.ingest import ingest

        try:
            report = await ingest(runtime, [Path(p) for p in request.paths], collection=request.collection,
                                  prune=request.prune, progress=EventProgress(send))
        except Exception as exc:
            log.warning("handed-over ingest failed: %s", type(exc).__name__)
            return ingest_error(exc)
        return ingest_output(report, request.as_json)
    if request.op == "learned-remove":
        return await learned_remove(runtime, request.paths[0] if request.paths else "")
    if request.op == "learned-confirm":
        return await learned_confirm(runtime, request.paths[0] if request.paths else "")
    if request.op == "learned-expire":
        return await learned_expire(runtime)
    if request.op == "sync":
        return await sync_job(runtime, request.paths, full=request.full, as_json=request.as_json)
    return await run_registry_job(runtime, request)  # `registry ingest` (and its shortcuts)


async def sync_job(runtime: "Runtime", names: list[str], *, full: bool = False, as_json: bool = False) -> JobOutput:
    """`askdesk sync [NAME…] [--full]`, locally or handed over to a running bot."""
    from agent.sources.base import SourceError
    from agent.sources.config import SourcesFileError
    from agent.sources.sync import sync_all

    try:
        reports = await sync_all(runtime, names or None, full=full)
    except (SourcesFileError, SourceError) as exc:
        return JobOutput(stderr=[f"error: {exc}"], code=2)
    if as_json:
        stdout = [json.dumps([r.to_json() for r in reports], indent=2, ensure_ascii=False)]
    else:
        stdout = [r.summary() for r in reports] or ["no sources declared: see docs/sources.md (sources.yaml)"]
        stdout += [f"  unreadable: {d}: {why}" for r in reports for d, why in r.failed[:10]]
    return JobOutput(stdout=stdout, code=1 if any(r.error for r in reports) else 0)


async def learned_remove(runtime: "Runtime", name: str) -> JobOutput:
    """`askdesk learned remove NAME`, locally or handed over to a running bot."""
    from agent.knowledge.learned import remove

    report = await remove(runtime, runtime.settings.learned_path, name)
    if report is None:
        return JobOutput(stderr=[f"error: no learned answer named {printable(name)} (see `askdesk learned list`)"],
                         code=2)  # a bad argument, like a missing path: exit code 2
    return JobOutput(stdout=[f"removed {printable(name)}" + (" and its passages" if report.pruned else "")])


def learned_answers(runtime: "Runtime"):
    """The deployment's learned answers on the machine's clock (agent/knowledge/learned.py)."""
    from agent.knowledge.learned import LearnedAnswers

    settings = runtime.settings
    return LearnedAnswers(runtime, settings.learned_path, review_days=settings.learned_review_days,
                          remind_days=settings.learned_remind_days)


async def learned_confirm(runtime: "Runtime", name: str) -> JobOutput:
    """`askdesk learned confirm NAME`: cited (again) until a new review date."""
    answers = learned_answers(runtime)
    confirmed = await answers.confirm(name)
    if confirmed is None:
        return JobOutput(stderr=[f"error: no learned answer named {printable(name)} (see `askdesk learned list`)"],
                         code=2)
    return JobOutput(stdout=[f"confirmed {printable(name)}: cited until {answers.review_by(confirmed):%Y-%m-%d}"])


async def learned_expire(runtime: "Runtime") -> JobOutput:
    """`askdesk learned review`: the passages of answers past their review date leave the index."""
    expired = await learned_answers(runtime).expire_due()
    return JobOutput(stdout=[f"expired {printable(a.name)} (not cited until confirmed)" for a in expired]
                     or ["no learned answer is past its review date"])


def ingest_output(report, as_json: bool):
    """What `askdesk ingest` prints for `report`, locally or handed over to a running bot."""
    out = JobOutput()
    if as_json:
        out.stdout.append(json_safe(json.dumps(report.to_json(), indent=2, ensure_ascii=False)))
    else:
        out.stderr += [f"skipped {printable(source)}: {printable(reason)}" for source, reason in report.skipped]
        out.stdout += [f"pruned {printable(source)}" for source in report.pruned]
        out.stdout.append(printable(report.summary()))
        if report.languages_note:  # documents in a language askdesk has no translations for
            out.stdout.append(printable(report.languages_note))
    out.code = 1 if report.files == 0 else 0
    return out


def ingest_error(exc: Exception):
    """The one line for an ingest that failed on a running bot."""
    from agent.knowledge.embedders import EmbedderError
    from agent.knowledge.search import KnowledgeBaseUnavailable
    if isinstance(exc, (KnowledgeBaseUnavailable, EmbedderError)):
        return JobOutput(stderr=[f"error: {printable(exc)}"], code=1)
    return JobOutput(stderr=[f"error: ingestion failed: {type(exc).__name__}: {printable(exc)}"], code=1)


def registry_output(report) -> JobOutput:
    """What a registry ingest prints, locally or handed over to a running bot."""

    return JobOutput(stdout=[report.summary()], code=1 if report.loaded == 0 else 0)


async def ingest_registry(runtime: "Runtime", decl: "Declaration", path: Path, collection: str | None = None):
    from agent.registry.registry import Registry

    return await Registry(decl, runtime, collection=collection).ingest(Path(path))


async def run_registry_job(runtime: "Runtime", request: JobRequest, declaration: "Declaration | None" = None) -> JobOutput:
    """A `registry-ingest` job handed over by the CLI, run on the server's runtime (the
    declaration the CLI used, by path; else the server's own registry of that name)."""
    from agent.registry.declaration import DeclarationError, load_declaration
    from agent.registry.loader import find_declaration
    from agent.registry.records import RegistryFormatError

    try:
        if declaration is not None:
            decl = declaration
        elif request.declaration:
            decl = load_declaration(request.declaration)
        else:
            decl = find_declaration(runtime.settings, request.registry or "")
        report = await ingest_registry(runtime, decl, Path(request.paths[0]), request.collection)
    except (DeclarationError, RegistryFormatError) as exc:
        return JobOutput(stderr=[f"error: {exc}"], code=2)
    except Exception as exc:
        return JobOutput(stderr=[f"error: {type(exc).__name__}: {exc}"], code=1)
    return registry_output(report)

