"""The HTTP listener of the Teams bot: the SDK's FastAPI adapter on a socket we bind
ourselves, served by uvicorn inside our event loop.

Binding first turns a busy port into one clear error (uvicorn would log and exit), lets
tests use port 0, and keeps uvicorn from taking over SIGINT/SIGTERM: `askdesk serve`
owns the signals and stops every surface it runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from dataclasses import dataclass

import uvicorn

log = logging.getLogger("askdesk.teams")

MESSAGES_PATH = "/api/messages"


class _EmbeddedServer(uvicorn.Server):
    def capture_signals(self):  # the host process handles signals
        return contextlib.nullcontext()


def bind(host: str, port: int) -> socket.socket:
    """A listening socket; OSError (port in use, no permission) for the caller to report."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(2048)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


@dataclass
class TeamsListener:
    """Owns the socket and the uvicorn server that serves the SDK's FastAPI app on it."""

    sock: socket.socket
    server: uvicorn.Server | None = None
    task: asyncio.Task | None = None

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def adapter(self):
        """The SDK adapter for `App(http_server_adapter=...)`, served on our socket."""
        from microsoft_teams.apps import FastAPIAdapter

        def factory(fastapi):
            config = uvicorn.Config(fastapi, host="127.0.0.1", port=self.port, log_level="warning",
                                    access_log=False, lifespan="off", server_header=False)
            self.server = _EmbeddedServer(config)
            return self.server

        return FastAPIAdapter(server_factory=factory)

    async def start(self) -> None:
        assert self.server is not None, "build the App with adapter() first"
        self.task = asyncio.ensure_future(self.server.serve(sockets=[self.sock]))
        while not self.server.started:
            if self.task.done():
                self.task.result()  # raises what stopped it
                raise RuntimeError("the Teams listener stopped during start-up")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        if self.server is not None:
            self.server.should_exit = True
        if self.task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.task, timeout=10)
        self.sock.close()
