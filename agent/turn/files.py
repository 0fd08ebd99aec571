"""Files attached to a question: context for that conversation only, never ingested.

The `attach` stage (right after `check`) reads what the surface fetched with the ingestion
loaders (agent/knowledge/attached.py, in a worker thread: a PDF's text extraction is CPU work
that must not stall other conversations), says in one line each file it could not use (an
image, a type it cannot read, too large, not downloadable, a damaged PDF), and puts the
passages that best match the question before the model as an `attached_files` result, ahead
of the knowledge base's. A message with files and no text asks about the files; one whose files
are all unusable gets just the notes, never "your message is empty".

The files stay with their thread for an hour (`ThreadFiles`, agent/turn/context.py: in this
process's memory, shared by every collection's context) so a
follow-up can ask more about them. A private question's files are used for its answer only.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import PurePosixPath

from agent.answers import AnswerResult, Attachment, FileProblem
from agent.capabilities.base import Found
from agent.config import Settings
from agent.knowledge import attached
from agent.knowledge.loaders import Document, LoadError
from agent.prompts import PromptSet
from agent.tools.base import ToolResult
from agent.tools.formatted_context import format_passage, reference_of
from agent.turn.context import TurnContext
from agent.turn.state import Turn
from agent.understanding.route import Clarify, Refuse, Route, Use, route_name

log = logging.getLogger("askdesk.files")

ATTACHED_TOOL = "attached_files"


def file_problem(name: str, mimetype: str, size: int | None, settings: Settings) -> FileProblem | None:
    """Why a file will not be read, told before anyone downloads it (None: fetch it)."""
    kind = attached.kind(name, mimetype)
    if kind != "readable":
        return kind
    if size is not None and size > settings.file_max_bytes:
        return "too_large"
    return None


def note(problem: FileProblem, name: str, prompts: PromptSet, settings: Settings) -> str:
    """The one line the asker gets about a file askdesk did not use."""
    if problem == "too_large":
        return prompts.text("file_too_large", name=name, limit=f"{settings.file_max_mb:g}")
    return prompts.text(f"file_{problem}", name=name)


def _read(attachment: Attachment) -> Document:
    assert attachment.data is not None
    return attached.read(attachment.name, attachment.mimetype, attachment.data)


async def read_files(attachments: list[Attachment], prompts: PromptSet,
                     settings: Settings) -> tuple[list[Document], list[str]]:
    """The files' text, and one note for each file that could not be used; never raises."""
    documents: list[Document] = []
    notes: list[str] = []
    for item in attachments:
        name = PurePosixPath(item.name).name or "attachment"
        problem = item.problem or file_problem(item.name, item.mimetype, item.size, settings)
        if problem is None and item.data is None:
            problem = "download_failed"
        if problem is None and len(item.data or b"") > settings.file_max_bytes:
            problem = "too_large"
        if problem is not None:
            notes.append(note(problem, name, prompts, settings))
            continue
        try:
            documents.append(await asyncio.to_thread(_read, item))
        except LoadError as exc:
            notes.append(prompts.text("file_unreadable", name=name, reason=str(exc).split(" (")[0]))
        except Exception as exc:  # a parser's own failure on a damaged file: the file is skipped, the turn goes on
            log.warning("files: reading an attachment failed (%s)", type(exc).__name__)
            notes.append(prompts.text("file_unreadable", name=name, reason="damaged file"))
    return documents, notes


def context(documents: list[Document], question: str, prompts: PromptSet, settings: Settings,
            capability: str) -> Found | None:
    """The passages of `documents` that best match `question`, as a tool result for the model."""
    found = attached.passages(documents, question, budget=settings.file_context_chars,
                              chunk_chars=settings.chunk_chars, overlap=settings.chunk_overlap)
    if not found:
        return None
    blocks = "\n\n".join(format_passage(i, p) for i, p in enumerate(found, start=1))
    references = []
    for p in found:
        ref = reference_of(p)
        if all((r.source, r.section) != (ref.source, ref.section) for r in references):
            references.append(ref)
    result = ToolResult(text=f"{prompts.text('attached_files')}\n\n{blocks}", references=references,
                        documents=[reference_of(p) for p in found], data=found)
    return Found(capability, ATTACHED_TOOL, {"files": [d.source for d in documents]}, result, question)


async def attach(turn: Turn, ctx: TurnContext) -> None:
    """Read the question's files (and recall the thread's), note what could not be used."""
    if turn.result is not None:
        return
    req = turn.request
    kept = ctx.files.get(req.surface, req.thread_id) if ctx.files is not None else []
    if not req.attachments and not kept:
        return
    documents, notes = await read_files(req.attachments, ctx.prompts, ctx.settings)
    if not turn.text:
        if not documents:  # only images, unreadable or refused files: the notes are the answer
            turn.route = Clarify("\n".join(notes) or ctx.prompts.render("empty_message"), decided_by="attachment",
                                 reason="no attached file could be read")
            turn.result = AnswerResult(answer=turn.route.question or "", route=route_name(turn.route))
            turn.remember = False
            return
        turn.text = ctx.prompts.text("file_question")
    if documents and ctx.files is not None and not req.private:
        ctx.files.keep(req.surface, req.thread_id, documents)
    names = {d.source for d in documents}
    current = [*documents, *(d for d in kept if d.source not in names)]
    found = await asyncio.to_thread(context, current, turn.text, ctx.prompts, ctx.settings, ctx.knowledge.name)
    turn.attached = [found] if found is not None else []
    turn.file_notes = notes
    if notes:
        await turn.answer_text.note("\n".join(notes))  # first, before any answer text


def about_files(route: Route, turn: Turn, ctx: TurnContext) -> Route:
    """A message the gate would refuse, ask to clarify or doubt is, with files at hand, about them."""
    if not turn.attached:
        return route
    match route:
        case Refuse() | Clarify():
            return Use(ctx.knowledge, turn.text, decided_by="attachment", reason="files are attached to the conversation",
                       best_score=route.best_score)
        case Use():
            route.borderline = False  # "may be outside our documents": not when the answer is in the file
    return route


def with_files(turn: Turn, found: Found | None) -> Found | None:
    """A search-only answer's passages: the attached files' best first, then the knowledge base's."""
    if not turn.attached:
        return found
    files = turn.attached[0].result
    best = sorted(files.data or [], key=lambda p: -p.score)[:3]
    passages = best + list(found.result.data or [] if found is not None else [])
    return Found(turn.attached[0].capability, ATTACHED_TOOL, {}, ToolResult(text="", data=passages), turn.text)
