"""The HTTP listener of the Teams bot: an aiohttp implementation of the SDK's
`HttpServerAdapter` protocol, on a socket we bind ourselves.

Why not the SDK's default FastAPI + uvicorn adapter: aiohttp is already the Slack surface's
server (one web stack in the process), its C HTTP parser keeps the acknowledgement of a
burst of activities in milliseconds (uvicorn's pure-Python h11 parser costs several times
more per request), and it runs inside our event loop without taking over SIGINT/SIGTERM —
`askdesk serve` owns the signals and stops every surface it runs. Binding first turns a
busy port into one clear error and lets tests use port 0.

Malformed activities: after authentication, every activity is parsed with the SDK's own
models first (bot/teams/validation.py); one the SDK could not parse is answered HTTP 400 with
one WARNING line (its id and the failing fields), instead of reaching the SDK, which would log
a traceback quoting the input and answer 500.

Early acknowledgement: Teams needs the HTTP response of an invoke (message extension,
feedback) to carry its result, but nothing from any other activity. Those are answered
200 as soon as the request is authenticated — by the SDK's own InboundActivityTokenValidator,
the check its messaging endpoint runs — and the SDK's pipeline (which validates again and
dispatches to our handlers) runs right after, in the background, as on Slack.

The listener runs on its own thread and event loop: the main loop runs the SDK and every
answer (retrieval, embedded-store searches, model calls), and a burst of turns there must
not delay the next activity's acknowledgement. Activities cross to the main loop with
`run_coroutine_threadsafe`; invokes wait for their result the same way.

The two threads share the GIL, and CPython hands it from a busy thread to a waiting one only
every `sys.getswitchinterval()` (5 ms by default): while the main loop parses and answers a
burst of activities, every step of the listener (accept, read, respond) could wait that long.
`askdesk serve`, which owns its process, lowers the interval to SWITCH_INTERVAL when it serves
Teams (bot/commands/serve.py; measured, 50 activities at once × 6 rounds: acknowledgement p99
68-117 ms -> 34-37 ms, answers delivered no later); the listener itself changes nothing
process-wide.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
from typing import Any, Callable, Coroutine

from aiohttp import web

from bot.teams.validation import malformed

log = logging.getLogger("askdesk.teams")

MESSAGES_PATH = "/api/messages"
MAX_BODY = 4 * 1024 * 1024  # an activity is a few KB; Teams caps messages far below this
SWITCH_INTERVAL = 0.0005  # seconds; see the module docstring


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
    return sock


Spawn = Callable[[Coroutine[Any, Any, Any]], None]


def health(ready: bool) -> web.Response:
    """200 {"ok": true, "status": "ready"} once warmed up, 503 "starting" before (load balancers)."""
    return web.json_response({"ok": ready, "status": "ready" if ready else "starting"}, status=200 if ready else 503)


class AiohttpAdapter:
    """`microsoft_teams.apps.HttpServerAdapter` on aiohttp: the SDK registers its messaging
    endpoint (JWT validation + activity processing) through `register_route`.

    `early_ack` (set by the bot once it can run background work) acknowledges non-invoke
    activities before the SDK processes them; `validator` is None only in dev mode."""

    def __init__(self) -> None:
        self.app = web.Application(client_max_size=MAX_BODY)
        self.app.router.add_get("/healthz", self._healthz)
        self.spawn: Spawn | None = None
        self.validator: Any = None
        self.dev_mode = False
        self.main_loop: asyncio.AbstractEventLoop | None = None  # where the SDK runs (set at start)
        self.ready: Callable[[], bool] = lambda: True  # the service has warmed up (/healthz)

    def early_ack(self, spawn: Spawn, *, validator: Any, dev_mode: bool) -> None:
        self.spawn, self.validator, self.dev_mode = spawn, validator, dev_mode

    async def _authenticated(self, body: dict, headers: Any) -> bool:
        if self.dev_mode:
            return True
        if self.validator is None:
            return False
        authorization = headers.get("Authorization", "")
        if not authorization.startswith("Bearer "):
            return False
        try:
            await self.validator.validate_token(authorization.removeprefix("Bearer "), body.get("serviceUrl"))
        except Exception as exc:
            log.warning("teams: activity rejected: invalid token (%s)", type(exc).__name__)
            return False
        return True

    def register_route(self, method: str, path: str, handler: Any) -> None:
        if method != "POST":
            raise ValueError(f"unsupported HTTP method: {method}")

        async def route(request: web.Request) -> web.Response:
            try:
                body = json.loads(await request.read())
            except ValueError:
                return web.json_response({"error": "invalid JSON"}, status=400)
            if not isinstance(body, dict):
                return web.json_response({"error": "expected an activity object"}, status=400)
            incoming = {"body": body, "headers": dict(request.headers)}
            assert self.main_loop is not None
            if self.spawn is not None and not await self._authenticated(body, request.headers):
                return web.json_response({"error": "Unauthorized"}, status=401)
            problem = malformed(body)  # after authentication: strangers learn nothing about our parser
            if problem is not None:
                log.warning("teams: malformed %s", problem.describe())
                return web.json_response({"error": "malformed activity"}, status=400)
            if self.spawn is not None and body.get("type") != "invoke":
                self.main_loop.call_soon_threadsafe(self.spawn, _processed(handler, incoming))
                return web.Response(status=200)
            result = await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(handler(incoming), self.main_loop))
            status, payload = result["status"], result.get("body")
            if payload is None:
                return web.Response(status=status)
            return web.json_response(payload, status=status)

        self.app.router.add_post(path, route)

    def serve_static(self, path: str, directory: str) -> None:
        self.app.router.add_static(path, directory)

    async def start(self, port: int) -> None:  # the listener below owns the lifecycle
        raise NotImplementedError("askdesk starts the Teams listener itself (TeamsListener.start)")

    async def stop(self) -> None:
        return None

    async def _healthz(self, _: web.Request) -> web.Response:
        return health(self.ready())


async def _processed(handler: Any, incoming: dict) -> None:
    result = await handler(incoming)
    if result["status"] >= 400:
        log.warning("teams: activity processing answered HTTP %s after the acknowledgement", result["status"])


class TeamsListener:
    """Owns the socket and serves the adapter's aiohttp application on it, from a thread."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._adapter = AiohttpAdapter()
        self._runner: web.AppRunner | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self.sock.getsockname()[1]

    def adapter(self) -> AiohttpAdapter:
        """The SDK adapter for `App(http_server_adapter=...)`."""
        return self._adapter

    async def start(self) -> None:
        self._adapter.main_loop = asyncio.get_running_loop()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="askdesk-teams-listener", daemon=True)
        self._thread.start()
        await self._in_listener(self._serve())

    async def _serve(self) -> None:
        self._runner = web.AppRunner(self._adapter.app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.SockSite(self._runner, self.sock).start()

    async def _in_listener(self, work: Coroutine[Any, Any, Any]) -> Any:
        assert self._loop is not None
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(work, self._loop))

    async def stop(self) -> None:
        if self._loop is not None and self._thread is not None:
            if self._runner is not None:
                await self._in_listener(self._runner.cleanup())
                self._runner = None
            self._loop.call_soon_threadsafe(self._loop.stop)
            await asyncio.to_thread(self._thread.join, 10)
            self._loop.close()
            self._loop = self._thread = None
        self.sock.close()
