"""Build the Teams app: one `TeamsBot` (process-wide state) and a Teams SDK `App` whose
handlers delegate to the modules that hold the behaviour (messages, extension, feedback,
welcome).

Activities other than invokes are acknowledged as soon as they are authenticated (see
bot/teams/server.py); the SDK then dispatches them to our handlers, and the answer is
worked out in a background task and sent through the Bot Connector, so Teams never waits
on the agent. Invokes (message extension, feedback) answer in their HTTP response.
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Coroutine

from agent.config import Settings
from agent.state.feedback import FeedbackStore
from agent.prompts import PromptSet, default_prompts
from bot.dedupe import Deduper
from bot.rate_limit import RateLimiter
from bot.teams.credentials import TeamsAuth
from bot.teams.threads import ThreadAskers

if TYPE_CHECKING:
    from microsoft_teams.apps import App

    from agent.runtime import Runtime
    from agent.turn.service import Askdesk

log = logging.getLogger("askdesk.teams")

# Texts the Teams surface renders (prompts/teams.yaml and messages.yaml), with their variables.
TEAMS_PROMPTS: dict[str, set[str]] = {
    "teams_welcome": {"capabilities"},
    "teams_rate_limited": {"seconds"},
    "teams_thinking": set(),
    "teams_facility_title": {"summary"},
    "teams_facility_none": set(),
    "teams_facility_more": {"shown", "total"},
    "teams_facility_unavailable": {"ref"},
    "teams_extension_hint": set(),
    "teams_sources": set(),
    "too_long": {"limit", "length"},
    "empty_message": set(),
    "internal_error": {"ref"},
}


def surface_prompts(prompts: PromptSet) -> PromptSet:
    """The service's prompts, with the packaged Teams texts filling in for a custom prompts_dir
    that has none (a prompts_dir made for Slack keeps working)."""
    merged = dict(default_prompts().prompts)
    merged.update(prompts.prompts)
    found = PromptSet({name: merged[name] for name in TEAMS_PROMPTS if name in merged})
    found.require(TEAMS_PROMPTS)
    return found


@dataclass
class AnswerRecord:
    """What feedback on a sent answer is stored with (Teams' feedback invoke carries only the message id)."""

    answer_id: str
    route: str
    sources: list[str]
    question: str | None = None


@dataclass
class TeamsBot:
    """Process-wide Teams state shared by every handler."""

    settings: Settings
    askdesk: "Askdesk"
    runtime: "Runtime | None"
    auth: TeamsAuth
    app: "App" = field(init=False)
    prompts: PromptSet = field(init=False)
    dedupe: Deduper = field(default_factory=Deduper)
    limiter: RateLimiter = field(init=False)
    feedback: FeedbackStore = field(init=False)
    askers: ThreadAskers = field(init=False)
    notices_shown: Deduper = field(default_factory=lambda: Deduper(ttl_seconds=7 * 24 * 3600))
    answers: OrderedDict[str, AnswerRecord] = field(default_factory=OrderedDict)  # bot message id -> answer
    no_streaming: set[str] = field(default_factory=set)  # conversations whose stream was refused
    _inflight: set[asyncio.Task] = field(default_factory=set)

    def __post_init__(self) -> None:
        self.prompts = surface_prompts(self.askdesk.prompts)
        self.limiter = RateLimiter(self.settings.rate_limit_per_minute)
        self.feedback = FeedbackStore(self.settings.sqlite_path, store_text=self.settings.store_text)
        self.askers = ThreadAskers(self.settings.sqlite_path)

    def text(self, name: str, **values: Any) -> str:
        return self.prompts.render(name, **values)

    def remember_answer(self, message_id: str | None, record: AnswerRecord) -> None:
        if not message_id:
            return
        self.answers[message_id] = record
        while len(self.answers) > 5000:
            self.answers.popitem(last=False)

    # --- background work -----------------------------------------------------------------

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the HTTP response; `drain()` waits for it (tests, shutdown)."""
        task = asyncio.ensure_future(work)
        self._inflight.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task) -> None:
        self._inflight.discard(task)
        if not task.cancelled() and task.exception() is not None:
            exc = task.exception()
            log.error("teams: background work failed: %s", type(exc).__name__)

    async def drain(self, timeout: float = 10.0) -> None:
        """Wait until the work started so far has finished."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        await asyncio.sleep(0)
        while self._inflight and loop.time() < deadline:
            await asyncio.wait(list(self._inflight), timeout=max(0.01, deadline - loop.time()))

    async def close(self) -> None:
        await self.drain(timeout=30)
        await self.askers.close()


def build_teams_bot(settings: Settings, askdesk: "Askdesk", runtime: "Runtime | None" = None, *,
                    auth: TeamsAuth, adapter: Any = None) -> TeamsBot:
    """The Teams bot with its handlers registered; `adapter` is the SDK HTTP server adapter
    (bot/teams/server.py gives one bound to ASKDESK_TEAMS_PORT)."""
    from microsoft_teams.apps import App

    from bot.teams import extension, feedback, messages, welcome

    bot = TeamsBot(settings=settings, askdesk=askdesk, runtime=runtime, auth=auth)
    options: dict[str, Any] = dict(
        client_id=auth.client_id, client_secret=auth.client_secret, tenant_id=auth.tenant_id,
        dangerously_allow_unauthenticated_requests=auth.dev_mode,
        fetch_user_token=False, state=False, telemetry={"agent365": False},
    )
    if adapter is not None:
        options["http_server_adapter"] = adapter
    bot.app = App(**options)
    if hasattr(adapter, "early_ack"):
        from microsoft_teams.apps.auth import InboundActivityTokenValidator

        validator = (None if auth.dev_mode or not auth.client_id
                     else InboundActivityTokenValidator(auth.client_id, cloud=bot.app.cloud))
        adapter.early_ack(bot.spawn, validator=validator, dev_mode=auth.dev_mode)
    messages.register(bot)
    extension.register(bot)
    feedback.register(bot)
    welcome.register(bot)
    return bot
