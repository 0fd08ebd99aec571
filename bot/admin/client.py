"""The CLI side: hand a job to the `askdesk serve` that holds the data directory."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Callable

from agent.store.lock import read_holder
from bot.admin.channel import MAX_REQUEST
from bot.admin.location import recorded_path
from bot.admin.protocol import Event, JobOutput, JobRequest

LOST = ("error: the running askdesk serve stopped before the job finished; each file is either updated or "
        "still at its previous version (search never sees part of one); run the same command again to finish")


async def submit(data_dir: Path, request: JobRequest, on_event: Callable[[Event], None],
                 path: Path | None = None) -> JobOutput | None:
    """The job's output, or None when no server listens for `data_dir` (at `path`, default:
    where the bot recorded it in the data dir's lock file)."""
    path = path or recorded_path(read_holder(data_dir), data_dir)
    try:
        reader, writer = await asyncio.open_unix_connection(str(path), limit=MAX_REQUEST)
    except OSError:  # no socket, a stale one, or a path the OS cannot bind to
        return None
    on_event(Event(event="connected"))
    try:
        writer.write(request.model_dump_json().encode() + b"\n")
        await writer.drain()
        while line := await reader.readline():
            message = json.loads(line)
            if message.get("event") == "output":
                return JobOutput.model_validate(message)
            on_event(Event.model_validate(message))
    except (ConnectionError, ValueError):
        pass
    finally:
        writer.close()
    return JobOutput(stderr=[LOST], code=1)
