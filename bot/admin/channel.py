"""The server side: a Unix socket started by `askdesk serve` (where: bot/admin/location.py).

Only the user running the bot can connect: the socket is created 0600 in the data dir or in a
private runtime dir, and every connection's peer uid (SO_PEERCRED) must be ours. Jobs run one
at a time on the bot's own Runtime while questions keep being answered: writes go through the
same store, so the new text is searchable the moment the job reports done. A connection that
sends no request within `request_timeout` is closed, and at most `max_clients` are open at once
(more are told so and closed): idle clients cannot pile up descriptors in the bot.
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

from agent.store.lock import record_holder
from bot.admin.jobs import run_job
from bot.admin.location import MAX_PATH, socket_path
from bot.admin.protocol import Event, JobOutput, JobRequest

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.admin")
MAX_REQUEST = 1 << 20
REQUEST_TIMEOUT = 10.0  # seconds for a client to send its request line
MAX_CLIENTS = 16  # connections open at once: one running job, the rest queued behind it
BUSY = ("error: the running askdesk serve has too many admin connections open; "
        "run the command again in a moment")


def _peer_uid(writer: asyncio.StreamWriter) -> int | None:
    sock = writer.get_extra_info("socket")
    if sock is None or not hasattr(socket, "SO_PEERCRED"):
        return None
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class AdminChannel:
    request_timeout = REQUEST_TIMEOUT
    max_clients = MAX_CLIENTS

    def __init__(self, runtime: "Runtime", path: Path, data_dir: Path | None = None) -> None:
        self.runtime = runtime
        self.path = path
        self.data_dir = data_dir
        self._server: asyncio.AbstractServer | None = None
        self._jobs = asyncio.Lock()  # one job at a time, in arrival order
        self._handlers: set[asyncio.Task] = set()

    @classmethod
    async def start(cls, settings: "Settings", runtime: "Runtime") -> "AdminChannel | None":
        """Listen and record where in the data dir's lock file; None with a shared Qdrant server
        (every process can write to it directly) or when no socket can be made (one warning)."""
        if settings.qdrant_url:
            return None
        path = socket_path(settings.data_dir)
        if path is None:
            log.warning("admin channel off: no place for its socket fits a %d-byte path (data dir %s, "
                        "XDG_RUNTIME_DIR, temp dir); `askdesk ingest` cannot reach this bot: stop it to ingest, "
                        "or use a shorter ASKDESK_DATA_DIR", MAX_PATH, settings.data_dir)
            return None
        channel = cls(runtime, path, settings.data_dir)
        try:
            await channel._listen()
            record_holder(settings.data_dir, admin_socket=str(path))
        except OSError as exc:
            log.warning("admin channel off (%s): `askdesk ingest` cannot reach this bot: stop it to ingest",
                        type(exc).__name__)
            await channel.close()
            return None
        if path.parent != settings.data_dir:
            log.info("admin channel at %s (the data dir's path is too long for a socket)", path)
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
            if len(self._handlers) > self.max_clients:
                send(JobOutput(stderr=[BUSY], code=1))
                return
            try:
                async with asyncio.timeout(self.request_timeout):
                    line = await reader.readline()
            except TimeoutError:
                return  # connected and said nothing: not a client of ours
            try:
                request = JobRequest.model_validate_json(line)
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
        if self.data_dir is not None:
            try:
                record_holder(self.data_dir, admin_socket=None)
            except OSError:
                pass
