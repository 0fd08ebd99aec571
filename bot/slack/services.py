"""What the listeners need, handed to them by Bolt.

One global middleware puts these objects into every request's Bolt context; Bolt passes
context entries to a listener by parameter name, like its own `client` or `say`. So a
listener declares what it uses (`askdesk`, `answering`, `feedback`, ...) and imports
no shared application object.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from agent.config import Settings
from agent.state.feedback import FeedbackStore
from bot.cache import bounded
from bot.dedupe import Deduper
from bot.slack.history import ThreadHistory
from bot.rate_limit import RateLimiter
from bot.slack.reply import Features

if TYPE_CHECKING:
    from agent.runtime import Runtime
    from agent.turn.service import Askdesk

NOTICE_TTL_S = 7 * 24 * 3600
QUESTIONS_KEPT = 5000


class Questions:
    """Question text by answer id, kept only with `store_text`, for feedback records."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._by_answer = bounded(QUESTIONS_KEPT)

    def remember(self, answer_id: str, question: str) -> None:
        if self.enabled:
            self._by_answer[answer_id] = question

    def get(self, answer_id: str | None) -> str | None:
        return self._by_answer.get(answer_id or "") if self.enabled else None


@dataclass
class Answering:
    """Everything that turns a Slack message into an answer (bot/slack/events.py)."""

    askdesk: "Askdesk"
    settings: Settings
    threads: ThreadHistory
    seen: Deduper
    limiter: RateLimiter
    features: Features
    questions: Questions
    notices: Deduper


@dataclass
class SlackServices:
    askdesk: "Askdesk"
    settings: Settings
    runtime: "Runtime | None"
    feedback: FeedbackStore
    questions: Questions
    answering: Answering

    @classmethod
    def create(cls, settings: Settings, askdesk: "Askdesk", runtime: "Runtime | None", threads: ThreadHistory) -> "SlackServices":
        questions = Questions(settings.store_text)
        answering = Answering(
            askdesk=askdesk, settings=settings, threads=threads, seen=Deduper(),
            limiter=RateLimiter(settings.rate_limit_per_minute), features=Features(), questions=questions,
            notices=Deduper(ttl_seconds=NOTICE_TTL_S),
        )
        return cls(askdesk=askdesk, settings=settings, runtime=runtime, questions=questions, answering=answering,
                   feedback=FeedbackStore(settings.sqlite_path, store_text=settings.store_text))

    def install(self, app: AsyncApp) -> None:
        """Register the middleware that hands these objects to every listener."""
        entries = {f.name: getattr(self, f.name) for f in fields(self)}

        async def provide(context: AsyncBoltContext, next: Callable[[], Awaitable[Any]]) -> Any:
            context.update(entries)
            return await next()

        app.middleware(provide)
