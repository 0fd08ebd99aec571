"""Messages in: mentions in channels, DMs and assistant-pane messages -> one answer each.

Rules: channel messages are answered when they mention the bot (always in the mention's
thread); later thread messages without a mention only when
`slack_thread_requires_mention` is off and the bot already spoke in that thread. Bots
(this one included), edits and system subtypes are ignored. DMs and assistant threads
answer every message. Each user message is answered once, whichever of its deliveries
(`app_mention` / `message`) arrives first.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.service import AnswerResult, AskRequest
from bot.slack.blocks import feedback_value
from bot.slack.history import mentions, strip_mention
from bot.slack.reply import Reply

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = logging.getLogger("askdesk.slack")

# Message subtypes that carry a user's question; everything else (edits, joins, topic
# changes, bot_message, message_deleted, ...) is not a question.
USER_SUBTYPES = {None, "file_share", "thread_broadcast"}
FEEDBACK_ROUTES = {"knowledge", "facility", "clarify"}
THINKING = "Thinking…"


@dataclass
class Incoming:
    channel: str
    ts: str
    thread_ts: str  # the thread the answer goes to
    in_thread: bool  # the message itself is a thread reply (history exists)
    user: str
    team: str | None
    text: str
    is_dm: bool
    mentioned: bool

    @property
    def thread_id(self) -> str:
        return f"{self.channel}:{self.thread_ts}"


def parse(event: dict[str, Any], context: AsyncBoltContext, *, via_mention: bool) -> Incoming | None:
    """The question in an event, or None when the event is not a user's question."""
    if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id") or event.get("edited"):
        return None
    user = event.get("user")
    if not user or user == context.bot_user_id:
        return None
    channel, ts = event.get("channel"), event.get("ts")
    if not channel or not ts:
        return None
    raw = event.get("text") or ""
    is_dm = event.get("channel_type") == "im" or str(channel).startswith("D")
    thread_ts = event.get("thread_ts")
    return Incoming(
        channel=channel, ts=ts, thread_ts=thread_ts or ts, in_thread=bool(thread_ts and thread_ts != ts),
        user=user, team=event.get("team") or context.team_id, text=strip_mention(raw, context.bot_user_id),
        is_dm=is_dm, mentioned=via_mention or mentions(raw, context.bot_user_id),
    )


def register(bot: "SlackBot") -> None:
    @bot.app.event("app_mention")
    async def on_mention(event: dict, context: AsyncBoltContext, client: AsyncWebClient) -> None:
        async with bot.working():
            await handle(bot, parse(event, context, via_mention=True), context, client)

    @bot.app.event("message")
    async def on_message(event: dict, context: AsyncBoltContext, client: AsyncWebClient) -> None:
        async with bot.working():
            await handle(bot, parse(event, context, via_mention=False), context, client)


def channel_allowed(bot: "SlackBot", channel: str) -> bool:
    allow = bot.settings.slack_channels
    return not allow or channel in allow


async def _bot_in_thread(bot: "SlackBot", incoming: Incoming, context: AsyncBoltContext) -> bool:
    try:
        raw = await bot.history.messages(incoming.channel, incoming.thread_ts)
    except SlackApiError:
        return False
    return any(m.get("user") == context.bot_user_id or (context.bot_id and m.get("bot_id") == context.bot_id) for m in raw)


async def handle(bot: "SlackBot", incoming: Incoming | None, context: AsyncBoltContext, client: AsyncWebClient) -> None:
    if incoming is None:
        return
    if not incoming.is_dm:
        if not incoming.mentioned:
            follow_up = incoming.in_thread and not bot.settings.slack_thread_requires_mention
            if not follow_up or not channel_allowed(bot, incoming.channel):
                return
            if not await _bot_in_thread(bot, incoming, context):
                return
        elif not channel_allowed(bot, incoming.channel):
            if bot.dedupe.claim_message(incoming.channel, incoming.ts):
                await _ephemeral(client, incoming, "I'm not enabled in this channel. Ask me in a DM, or ask an admin to add this channel to askdesk's allowlist.")
            return
    if not bot.dedupe.claim_message(incoming.channel, incoming.ts):
        log.debug("slack: %s:%s already answered", incoming.channel, incoming.ts)
        return
    await answer(bot, incoming, context, client)


async def _ephemeral(client: AsyncWebClient, incoming: Incoming, text: str) -> None:
    try:
        if incoming.is_dm:
            await client.chat_postMessage(channel=incoming.channel, thread_ts=incoming.thread_ts, text=text)
        else:
            await client.chat_postEphemeral(
                channel=incoming.channel, user=incoming.user, thread_ts=incoming.thread_ts, text=text
            )
    except SlackApiError as exc:
        log.warning("slack: could not send a note: %s", exc.response.get("error"))


def _rate_note(seconds: float) -> str:
    return (
        f"You're asking faster than I can keep up — please try again in {int(seconds)} s. "
        "(Your question wasn't lost: just send it again then.)"
    )


async def answer(bot: "SlackBot", incoming: Incoming, context: AsyncBoltContext, client: AsyncWebClient) -> None:
    settings = bot.settings
    if not incoming.text:
        await _ephemeral(client, incoming, "Ask me a question — for example “Who is eligible for child care assistance?”")
        return
    if len(incoming.text) > settings.max_message_chars:
        await _ephemeral(
            client, incoming,
            f"Your message is {len(incoming.text):,} characters long; I can take at most "
            f"{settings.max_message_chars:,}. Please shorten it to the question itself.",
        )
        return
    wait = bot.limiter.check(incoming.user)
    if wait:
        await _ephemeral(client, incoming, _rate_note(wait))
        return

    assistant_thread = incoming.is_dm and incoming.in_thread and (incoming.team or "") not in bot.no_assistant_api
    reply = Reply(
        bot, client, channel=incoming.channel, thread_ts=incoming.thread_ts, team_id=incoming.team,
        user_id=incoming.user, assistant=assistant_thread,
    )
    await reply.progress(THINKING)  # instant feedback: a status line, stream task or placeholder

    history, raw = [], []
    if incoming.in_thread:
        try:
            history, raw = await bot.history.chat_history(
                incoming.channel, incoming.thread_ts, before_ts=incoming.ts, bot_user_id=context.bot_user_id,
                bot_id=context.bot_id, budget_chars=settings.history_chars,
            )
        except SlackApiError as exc:
            log.warning("slack: conversations.replies failed (%s); answering without history", exc.response.get("error"))
    if reply.assistant and not any(m.role == "user" for m in history):
        await _set_title(bot, client, incoming)

    request = AskRequest(
        text=incoming.text, surface="slack", thread_id=incoming.thread_id, user_id=incoming.user,
        history=history, collection=settings.slack_channel_collections.get(incoming.channel),
    )
    answer_id = uuid.uuid4().hex[:12]
    try:
        result = await bot.askdesk.answer(request, progress=reply.progress, on_text=reply.text)
    except Exception:  # answer() promises not to raise; a bug must still not leave the user hanging
        log.exception("slack: answer failed (reference %s)", answer_id)
        result = AnswerResult(
            answer=f"Sorry, something went wrong while answering. Please try again. (reference {answer_id})",
            route="knowledge",
        )

    notice = result.notice if result.notice and _first_notice(bot, incoming, raw, result.notice) else None
    value = feedback_value(answer_id, result.route, result.references) if result.route in FEEDBACK_ROUTES else None
    try:
        await reply.finish(result.answer, result.references, notice=notice, value=value)
    except SlackApiError as exc:
        log.error("slack: posting the answer failed (reference %s): %s", answer_id, exc.response.get("error"))
        return
    bot.remember_question(answer_id, incoming.text)
    bot.history.remember(
        incoming.channel, incoming.thread_ts,
        {"ts": incoming.ts, "user": incoming.user, "text": incoming.text},
        *({"ts": ts, "user": context.bot_user_id, "bot_id": context.bot_id, "text": result.answer} for ts in reply.posted_ts[:1]),
    )


def _first_notice(bot: "SlackBot", incoming: Incoming, raw: list[dict], notice: str) -> bool:
    """Say the "no provider key" notice once per thread (also across restarts: the thread shows it)."""
    if any(notice in str(m.get("blocks") or "") or notice in (m.get("text") or "") for m in raw):
        return False
    return bot.notices_shown.first_time(incoming.thread_id)


async def _set_title(bot: "SlackBot", client: AsyncWebClient, incoming: Incoming) -> None:
    title = incoming.text if len(incoming.text) <= 60 else incoming.text[:59].rstrip() + "…"
    try:
        await client.assistant_threads_setTitle(channel_id=incoming.channel, thread_ts=incoming.thread_ts, title=title)
    except SlackApiError as exc:
        log.info("slack: thread title unavailable (%s)", exc.response.get("error"))
