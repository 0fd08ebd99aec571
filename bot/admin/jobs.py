"""The jobs a running server accepts, run on its own Runtime (the same code as a local run)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from bot.admin.protocol import Event, JobOutput, JobRequest

if TYPE_CHECKING:
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
    from bot.commands.knowledge import ingest_error, ingest_output

    if request.op == "ingest":
        from agent.knowledge.ingest import ingest

        try:
            report = await ingest(runtime, [Path(p) for p in request.paths], collection=request.collection,
                                  prune=request.prune, progress=EventProgress(send))
        except Exception as exc:
            log.warning("handed-over ingest failed: %s", type(exc).__name__)
            return ingest_error(exc)
        return ingest_output(report, request.as_json)
    if request.op == "registry-ingest":
        from bot.commands.registry import run_job as registry_job

        return await registry_job(runtime, request)
    from bot.commands.facility import run_job as facility_job  # `ingest-facilities`: the demo's registry

    return await facility_job(runtime, request)
