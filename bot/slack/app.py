"""Build the Slack app: a slack_bolt `AsyncApp`, its listeners registered per concern, and
Bolt's own aiohttp web app for HTTP mode.

Events are acked as soon as their signature checks out (bot/slack/http.py) and then
dispatched through Bolt, whose listeners run as tasks of their own
(`process_before_response=False`), so the agent always works after the 3-second ack; slash commands ack with a short "Searching…" and finish through
`respond`. Listeners get what they use from Bolt (bot/slack/services.py). The Web API
client honours Slack's 429 `Retry-After` through slack_sdk's rate-limit retry handler.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.listener.async_listener_completion_handler import AsyncListenerCompletionHandler
from slack_bolt.listener.async_listener_start_handler import AsyncListenerStartHandler
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from agent.config import Settings
from bot.dedupe import event_key
from bot.slack import actions, agent_view, anyway, commands, comments, confirm, escalation, events, learned_review
from bot.slack.history import ThreadHistory
from bot.slack.http import EVENTS_PATH, healthz, request_guard
from bot.slack.revisit import SlackRevisitDesk
from bot.slack.services import Answering, SlackServices
from bot.slack import private
from bot.slack.settings import SURFACE, SlackSettings

if TYPE_CHECKING:
    from agent.turn.service import Askdesk
    from bot.turn import TurnRunner

log = logging.getLogger("askdesk.slack")
BOLT_LOGGER = "askdesk.slack.bolt"


def api_base_url(url: str) -> str:
    """slack_sdk joins base_url + method name, so the base must end with a slash."""
    return url if url.endswith("/") else url + "/"


def make_client(slack: SlackSettings, token: str | None) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_base_url(slack.api_url),
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=1),
            AsyncRateLimitErrorRetryHandler(max_retry_count=2),
        ],
    )


def quiet_library_logs() -> None:
    """Bolt logs whole request bodies at INFO/DEBUG and slack_sdk every API call's arguments at
    DEBUG: message text must never reach a log, whatever `-v` sets the root level to."""
    for name in ("slack_bolt", "slack_sdk", BOLT_LOGGER):
        logging.getLogger(name).setLevel(logging.WARNING)


class _Started(AsyncListenerStartHandler):
    """Bolt runs this inside each listener's task: keep a (strong) reference to it."""

    def __init__(self, tasks: set[asyncio.Task]) -> None:
        self.tasks = tasks

    async def handle(self, request: Any, response: Any) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks.add(task)


class _Finished(AsyncListenerCompletionHandler):
    def __init__(self, tasks: set[asyncio.Task]) -> None:
        self.tasks = tasks

    async def handle(self, request: Any, response: Any) -> None:
        self.tasks.discard(asyncio.current_task())  # type: ignore[arg-type]


def register_listeners(app: AsyncApp, askdesk: "Askdesk", slack: SlackSettings) -> None:
    """One module per concern, as in Slack's bolt-python-assistant-template."""
    events.register(app)
    agent_view.register(app)
    commands.register(app, askdesk.commands())
    private.register(app, slack.private_command)
    actions.register(app)
    escalation.register(app)
    anyway.register(app)
    confirm.register(app)
    comments.register(app)
    learned_review.register(app)


class SlackApp:
    """The Bolt app plus what a process needs around it: HTTP serving and draining."""

    def __init__(self, settings: Settings, app: AsyncApp, services: SlackServices, signing_secret: str | None) -> None:
        self.settings = settings
        self.app = app
        self.services = services
        self.signing_secret = signing_secret
        self.inflight: set[asyncio.Task] = set()  # running listeners, for drain()
        app.listener_runner.listener_start_handler = _Started(self.inflight)
        app.listener_runner.listener_completion_handler = _Finished(self.inflight)

    async def drain(self, timeout: float = 10.0, *, cancel: bool = False) -> None:
        """Wait until listeners started so far have finished; with `cancel` (shutting down),
        those still running at `timeout` are cancelled, each closing its answer with a note."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        idle = 0
        while idle < 3 and loop.time() < deadline:  # a just-acked listener may not have started yet
            await asyncio.sleep(0.01)
            if self.inflight:
                idle = 0
                await asyncio.wait(list(self.inflight), timeout=max(0.01, deadline - loop.time()))
            else:
                idle += 1
        if cancel and self.inflight:
            log.warning("slack: %d answer(s) still running at shutdown: closing them with a note", len(self.inflight))
            for task in list(self.inflight):
                task.cancel()
            await asyncio.wait(list(self.inflight), timeout=5)

    def web_app(self) -> web.Application:
        """Bolt's aiohttp application (POST /slack/events) behind the request guard, plus
        GET /healthz for load balancers."""
        application = self.app.web_app(path=EVENTS_PATH, port=self.settings.port)
        if self.signing_secret:
            application.middlewares.append(request_guard(self.signing_secret, self._dispatch_event))
        application.router.add_get("/healthz", healthz(lambda: self.services.askdesk.ready))
        return application

    def _dispatch_event(self, request: web.Request, body: str) -> None:
        """Run an already-acked event through Bolt (its middleware, dedupe and listeners),
        after the ack is on its way: even building Bolt's request waits until then."""
        query, headers = request.query_string, dict(request.headers)

        async def dispatch() -> None:
            await self.app.async_dispatch(AsyncBoltRequest(body=body, query=query, headers=headers))  # type: ignore[arg-type]

        task = asyncio.ensure_future(dispatch())
        self.inflight.add(task)
        task.add_done_callback(self.inflight.discard)

    async def start_http(self, host: str = "0.0.0.0", port: int = 3000) -> tuple[web.AppRunner, int]:
        """Serve HTTP mode; returns the runner (call `cleanup()`) and the bound port (port=0 picks one)."""
        runner = web.AppRunner(self.web_app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = next(iter(runner.addresses))[1]
        return runner, bound


def build_slack_app(
    settings: Settings,
    askdesk: "Askdesk",
    *,
    token: str | None,
    signing_secret: str | None,
    runner: "TurnRunner | None" = None,
) -> SlackApp:
    """The Slack bot for one workspace (bot token), listeners registered; `runner`: the turn
    runner shared with the process's other surfaces (one rate limit, one feedback store)."""
    quiet_library_logs()
    slack = SlackSettings.of(settings)
    client = make_client(slack, token)
    app = AsyncApp(
        client=client,
        signing_secret=signing_secret or "",
        request_verification_enabled=bool(signing_secret),
        process_before_response=False,
        logger=logging.getLogger(BOLT_LOGGER),
        name=BOLT_LOGGER,  # Bolt names its own loggers after the app: keep them under this one
    )
    services = SlackServices.create(settings, askdesk, ThreadHistory(client), runner, slack=slack)
    services.install(app)
    services.runner.escalation_desks.register(SURFACE, escalation.SlackDesk(client, askdesk.prompts))
    services.runner.revisits.register(SURFACE, SlackRevisitDesk(client, askdesk.prompts))

    @app.middleware
    async def drop_retries(body: dict[str, Any], context: AsyncBoltContext, answering: Answering,
                           next: Callable[[], Awaitable[Any]]) -> Any:
        """A re-delivered event (same event_id) is acked and dropped before any listener."""
        if body.get("type") == "event_callback" and body.get("event_id"):
            if await answering.seen.seen_event(body["event_id"]):
                log.info("slack: duplicate delivery of %s ignored", body.get("event_id"))
                return BoltResponse(status=200, body="")
            context["event_claim"] = event_key(body["event_id"])  # settled with the answer (bot/turn.py)
        return await next()

    register_listeners(app, askdesk, slack)
    return SlackApp(settings, app, services, signing_secret)
