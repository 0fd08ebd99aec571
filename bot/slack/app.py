"""Build the Slack app: one `SlackBot` (shared state) and a slack_bolt `AsyncApp` whose
listeners delegate to the modules that hold the behaviour (events, assistant, commands,
actions).

Bolt acknowledges every event before our listener runs (`process_before_response=False`),
so the agent always works after the 3-second ack; slash commands ack with a short
"Searching…" and finish through `respond`. The Web API client honours Slack's 429
`Retry-After` through slack_sdk's rate-limit retry handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, AsyncIterator

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.signature import SignatureVerifier
from slack_sdk.web.async_client import AsyncWebClient

from agent.config import Settings
from agent.feedback import FeedbackStore
from bot.slack.dedupe import Deduper
from bot.slack.history import ThreadHistory
from bot.slack.rate_limit import RateLimiter

if TYPE_CHECKING:
    from agent.runtime import Runtime
    from agent.service import Askdesk

log = logging.getLogger("askdesk.slack")

EVENTS_PATH = "/slack/events"


def api_base_url(url: str) -> str:
    """slack_sdk joins base_url + method name, so the base must end with a slash."""
    return url if url.endswith("/") else url + "/"


def make_client(settings: Settings, token: str | None) -> AsyncWebClient:
    return AsyncWebClient(
        token=token,
        base_url=api_base_url(settings.slack_api_url),
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(max_retry_count=1),
            AsyncRateLimitErrorRetryHandler(max_retry_count=2),
        ],
    )


@dataclass
class SlackBot:
    """Process-wide Slack state shared by every listener."""

    settings: Settings
    askdesk: "Askdesk"
    runtime: "Runtime | None"
    client: AsyncWebClient
    signing_secret: str | None = None
    app: AsyncApp = field(init=False)
    dedupe: Deduper = field(default_factory=Deduper)
    limiter: RateLimiter = field(init=False)
    history: ThreadHistory = field(init=False)
    feedback: FeedbackStore = field(init=False)
    notices_shown: Deduper = field(default_factory=lambda: Deduper(ttl_seconds=7 * 24 * 3600))
    questions: OrderedDict[str, str] = field(default_factory=OrderedDict)  # answer id -> question (store_text)
    no_assistant_api: set[str] = field(default_factory=set)  # team ids without the assistant feature
    no_streaming: set[str] = field(default_factory=set)  # team ids where chat.startStream is refused
    _inflight: set[asyncio.Task] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.settings.rate_limit_per_minute)
        self.history = ThreadHistory(self.client)
        self.feedback = FeedbackStore(self.settings.sqlite_path, store_text=self.settings.store_text)

    def remember_question(self, answer_id: str, question: str) -> None:
        if not self.settings.store_text:
            return
        self.questions[answer_id] = question
        while len(self.questions) > 5000:
            self.questions.popitem(last=False)

    @contextlib.asynccontextmanager
    async def working(self) -> AsyncIterator[None]:
        """Mark a listener's background work, so `drain()` (tests, shutdown) can wait for it."""
        task = asyncio.current_task()
        if task is not None:
            self._inflight.add(task)
        try:
            yield
        finally:
            if task is not None:
                self._inflight.discard(task)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until listeners started so far have finished."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await asyncio.sleep(0.02)  # let just-dispatched listener tasks start
        while self._inflight and loop.time() < deadline:
            await asyncio.wait(list(self._inflight), timeout=max(0.01, deadline - loop.time()))
            await asyncio.sleep(0.01)

    # --- HTTP mode ---------------------------------------------------------------------------

    def web_app(self) -> web.Application:
        """aiohttp application: Bolt on POST /slack/events, plus GET /healthz for load balancers.

        Events API deliveries are acknowledged as soon as their signature checks out and are
        dispatched to Bolt right after the response: the ack never waits behind Bolt's
        middleware, a cold-start auth.test or agent work queued on the loop, so Slack sees it
        well inside its 3-second limit even under a burst. Everything whose HTTP response
        carries content (url_verification, slash commands, button clicks) goes through Bolt
        directly.
        """
        verifier = SignatureVerifier(self.signing_secret) if self.signing_secret else None

        async def events(request: web.Request) -> web.Response:
            body = await request.text()
            if verifier is not None and request.content_type == "application/json":
                headers = request.headers
                if not verifier.is_valid(body, headers.get("X-Slack-Request-Timestamp", ""),
                                         headers.get("X-Slack-Signature", "")):
                    return web.json_response({"error": "invalid request"}, status=401)
                if '"event_callback"' in body:
                    bolt_request = AsyncBoltRequest(body=body, query=request.query_string,
                                                    headers={k.lower(): [v] for k, v in headers.items()})
                    if bolt_request.body.get("type") == "event_callback":
                        self._track(asyncio.ensure_future(self.app.async_dispatch(bolt_request)))
                        return web.Response(status=200)
            bolt_request = AsyncBoltRequest(body=body, query=request.query_string,
                                            headers={k.lower(): [v] for k, v in request.headers.items()})
            bolt_response = await self.app.async_dispatch(bolt_request)
            return await to_aiohttp_response(bolt_response)

        async def healthz(_: web.Request) -> web.Response:
            return web.json_response({"ok": True})

        application = web.Application()
        application.router.add_post(EVENTS_PATH, events)
        application.router.add_get("/healthz", healthz)
        return application

    def _track(self, task: asyncio.Future) -> None:
        self._inflight.add(task)  # type: ignore[arg-type]
        task.add_done_callback(self._inflight.discard)

    async def start_http(self, host: str = "0.0.0.0", port: int = 3000) -> tuple[web.AppRunner, int]:
        """Serve HTTP mode; returns the runner (call `cleanup()`) and the bound port (port=0 picks one)."""
        runner = web.AppRunner(self.web_app(), access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        return runner, bound


def build_slack_bot(
    settings: Settings,
    askdesk: "Askdesk",
    runtime: "Runtime | None" = None,
    *,
    token: str | None,
    signing_secret: str | None,
) -> SlackBot:
    """The Slack bot for one workspace (bot token), listeners registered."""
    from bot.slack import actions, assistant, commands, events

    client = make_client(settings, token)
    bot = SlackBot(settings=settings, askdesk=askdesk, runtime=runtime, client=client, signing_secret=signing_secret)
    bot.app = AsyncApp(
        client=client,
        signing_secret=signing_secret or "",
        request_verification_enabled=bool(signing_secret),
        logger=logging.getLogger("askdesk.slack.bolt"),
        name="askdesk",
    )

    @bot.app.middleware
    async def drop_retries(body: dict[str, Any], next: Any) -> Any:
        """A re-delivered event (same event_id) is acked and dropped before any listener."""
        if body.get("type") == "event_callback" and bot.dedupe.seen_event(body.get("event_id")):
            log.info("slack: duplicate delivery of %s ignored", body.get("event_id"))
            return BoltResponse(status=200, body="")
        return await next()

    events.register(bot)
    assistant.register(bot)
    commands.register(bot)
    actions.register(bot)
    return bot
