"""What the listeners need, handed to them by Bolt.

One global middleware puts these objects into every request's Bolt context; Bolt passes
context entries to a listener by parameter name, like its own `client` or `say`. So a
listener declares what it uses (`askdesk`, `runner`, `answering`, ...) and imports no shared
application object.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from agent.config import Settings
from bot.dedupe import Deliveries
from bot.slack.history import ThreadHistory
from bot.slack.reply import Features, OpenStreams
from bot.slack.settings import SlackSettings
from bot.turn import TurnRunner

if TYPE_CHECKING:
    from agent.turn.service import Askdesk


@dataclass
class Answering:
    """Everything that turns a Slack message into an answer (bot/slack/events.py)."""

    askdesk: "Askdesk"
    settings: Settings
    slack_settings: SlackSettings  # Slack's own (ASKDESK_SLACK_*)
    runner: TurnRunner
    threads: ThreadHistory
    seen: Deliveries
    features: Features
    streams: OpenStreams  # open streams, recorded so a killed process does not leave one open


@dataclass
class SlackServices:
    askdesk: "Askdesk"
    settings: Settings
    slack_settings: SlackSettings
    runner: TurnRunner
    answering: Answering

    @classmethod
    def create(cls, settings: Settings, askdesk: "Askdesk", threads: ThreadHistory,
               runner: TurnRunner | None = None, *, slack: SlackSettings | None = None) -> "SlackServices":
        runner = runner or TurnRunner(askdesk)
        slack = slack or SlackSettings.of(settings)
        answering = Answering(askdesk=askdesk, settings=settings, slack_settings=slack, runner=runner, threads=threads,
                              seen=runner.deliveries, features=Features(), streams=OpenStreams(runner.state))
        return cls(askdesk=askdesk, settings=settings, slack_settings=slack, runner=runner, answering=answering)

    def install(self, app: AsyncApp) -> None:
        """Register the middleware that hands these objects to every listener."""
        entries = {f.name: getattr(self, f.name) for f in fields(self)}

        async def provide(context: AsyncBoltContext, next: Callable[[], Awaitable[Any]]) -> Any:
            context.update(entries)
            return await next()

        app.middleware(provide)
