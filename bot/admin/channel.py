"""The server side: a Unix socket in the data directory, started by `askdesk serve`.

Only the user running the bot can connect: the socket is created 0600 inside the data dir and
every connection's peer uid (SO_PEERCRED) must be ours. Jobs run one at a time on the bot's
own Runtime while questions keep being answered: writes go through the same store, so the
new text is searchable the moment the job reports done.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import struct
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from bot.admin import SOCKET_NAME
from bot.admin.jobs import run_job
from bot.admin.protocol import Event, JobOutput, JobRequest

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.admin")
MAX_REQUEST = 1 << 20


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class AdminChannel:
    def __init__(self, runtime: "Runtime", path: Path) -> None:
        self.runtime = runtime
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._jobs = asyncio.Lock()  # one job at a time, in arrival order
        self._handlers: set[asyncio.Task] = set()

    @classmethod
    async def start(cls, settings: "Settings", runtime: "Runtime") -> "AdminChannel | None":
        """Listen on `<data_dir>/admin.sock`; None with a shared Qdrant server (every process
        can write to it directly) or when the socket cannot be created (logged)."""
        if settings.qdrant_url:
            return None
        channel = cls(runtime, settings.data_dir / SOCKET_NAME)
        try:
            await channel._listen()
        except OSError as exc:
            log.warning("admin channel unavailable (%s): `askdesk ingest` cannot reach this bot", exc)
            return None
        return channel

    async def _listen(self) -> None:
        if self.path.is_socket():
            self.path.unlink()  # left by a bot that was killed; we hold the store lock now
        old = os.umask(0o177)
        try:
            self._server = await asyncio.start_unix_server(self._handle, path=str(self.path), limit=MAX_REQUEST)
        finally:
            os.umask(old)
        os.chmod(self.path, 0o600)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        def send(message: Event | JobOutput) -> None:
            if not writer.is_closing():
                writer.write(message.model_dump_json().encode() + b"\n")

        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        try:
            uid = _peer_uid(writer)
            if uid is not None and uid != os.getuid():
                log.warning("admin channel: refused a connection from uid %s", uid)
                return
            try:
                request = JobRequest.model_validate_json(await reader.readline())
            except (ValidationError, ValueError):
                send(JobOutput(stderr=["error: the running askdesk serve did not understand the request "
                                       "(are both the same askdesk version?)"], code=2))
                return
            async with self._jobs:
                log.info("admin channel: running a handed-over %s job", request.op)
                output = await run_job(self.runtime, request, send)
            send(output)
            await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away (Ctrl-C): the job itself has finished or was never started
        finally:
            self._handlers.discard(task)  # type: ignore[arg-type]
            writer.close()

    async def close(self) -> None:
        """Stop listening; a job still running is cancelled (safe: a file's new version replaces
        the old one in one step, agent/knowledge/versions.py), and its client is told to run the
        command again."""
        if self._server is not None:
            self._server.close()
            self._server = None
        for task in list(self._handlers):
            task.cancel()
        await asyncio.gather(*self._handlers, return_exceptions=True)
        self.path.unlink(missing_ok=True)
