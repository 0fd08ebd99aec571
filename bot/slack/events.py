"""Messages in: mentions in channels, DMs and follow-ups in threads -> one answer each.

Rules: channel messages are answered when they mention the bot (always in the mention's
thread). In a thread the bot answered, the person who asked gets answers to follow-ups
without mentioning it again (ASKDESK_SLACK_FOLLOW_UPS); other people mention it (or, with
ASKDESK_SLACK_THREAD_REQUIRES_MENTION off, any reply in a thread the bot is in is answered).
Bots (this one included), edits and system subtypes are ignored. DMs answer every
message, in its thread. A channel whose answer mode (ASKDESK_ANSWER_MODE,
ASKDESK_CHANNEL_ANSWER_MODES) is `mentions` or `private` answers mentions only; in a `private`
one, and for a question starting with ASKDESK_PRIVATE_WORD, only the asker sees the answer
(bot/slack/private.py), as the shared runner decides (`TurnRunner.privacy`). A message's files
are fetched once the asker sees progress (bot/slack/files.py) and read by the service. Group
DMs (`channel_type` "mpim") are multi-person conversations and follow the channel rules, like
public ("channel") and private ("group") channels. Each user message is answered once,
whichever of its deliveries (`app_mention` / `message`) arrives first.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.answers import Attachment
from agent.messages import ChatMessage
from agent.prompts import speaking
from bot.dedupe import message_key
from bot.files import fetch_files
from bot.slack.files import remote_files
from bot.slack.escalation import relay_reply
from bot.slack.history import askers, mentions, strip_mention
from bot.slack.private import EphemeralReply, ephemeral_sender
from bot.slack.people import email_loader
from bot.slack.reply import SayStream, SetStatus, SlackReply, describe, send_note
from bot.slack.services import Answering
from bot.turn import Incoming

log = logging.getLogger("askdesk.slack")

# Message subtypes that carry a user's question; everything else (edits, joins, topic
# changes, bot_message, message_deleted, ...) is not a question.
USER_SUBTYPES = {None, "file_share", "thread_broadcast"}


@dataclass
class SlackMessage:
    """A user's message event, reduced to what the bot decides on."""

    channel: str
    ts: str
    thread_ts: str  # the thread the answer goes to
    in_thread: bool  # the message itself is a thread reply (history exists)
    user: str
    team: str | None
    text: str
    is_dm: bool
    mentioned: bool
    files: list[dict[str, Any]] = field(default_factory=list)  # Slack's file objects (event["files"])

    @property
    def thread_id(self) -> str:
        return f"{self.channel}:{self.thread_ts}"


@dataclass
class Slack:
    """Bolt's per-request helpers for one message."""

    context: AsyncBoltContext
    client: AsyncWebClient
    say_stream: SayStream | None
    set_status: SetStatus | None
    set_title: Any


def parse(event: dict[str, Any], context: AsyncBoltContext, *, via_mention: bool) -> SlackMessage | None:
    """The question in an event, or None when the event is not a user's question."""
    if event.get("subtype") not in USER_SUBTYPES or event.get("bot_id") or event.get("edited"):
        return None
    user = event.get("user")
    if not user or user == context.bot_user_id:
        return None
    channel, ts = event.get("channel"), event.get("ts")
    if not isinstance(channel, str) or not isinstance(ts, str):
        return None
    raw = event.get("text") if isinstance(event.get("text"), str) else ""
    # only a one-to-one DM answers every message; "channel", "group" and "mpim" need a mention
    is_dm = event.get("channel_type") == "im" or channel.startswith("D")
    thread_ts = event.get("thread_ts") if isinstance(event.get("thread_ts"), str) else None
    return SlackMessage(
        channel=channel, ts=ts, thread_ts=thread_ts or ts, in_thread=bool(thread_ts and thread_ts != ts),
        user=user, team=event.get("team") or context.team_id, text=strip_mention(raw, context.bot_user_id),
        is_dm=is_dm, mentioned=via_mention or mentions(raw, context.bot_user_id),
        files=[f for f in event.get("files") or [] if isinstance(f, dict)],
    )


def register(app: AsyncApp) -> None:
    @app.event("app_mention")
    async def on_mention(event: dict, context: AsyncBoltContext, client: AsyncWebClient, answering: Answering,
                         say_stream: Any, set_status: Any, set_title: Any) -> None:
        slack = Slack(context, client, say_stream, set_status if _is_dm(event) else None, set_title)
        await handle(answering, parse(event, context, via_mention=True), slack)

    @app.event("message")
    async def on_message(event: dict, context: AsyncBoltContext, client: AsyncWebClient, answering: Answering,
                         say_stream: Any, set_status: Any, set_title: Any) -> None:
        if await relay_reply(event, context, client, answering):  # a person's reply to an escalated question
            return
        slack = Slack(context, client, say_stream, set_status if _is_dm(event) else None, set_title)
        await handle(answering, parse(event, context, via_mention=False), slack)


def _is_dm(event: dict[str, Any]) -> bool:
    return event.get("channel_type") == "im"


def channel_allowed(answering: Answering, channel: str) -> bool:
    allow = answering.slack_settings.channels
    return not allow or channel in allow


async def _follow_up_allowed(answering: Answering, incoming: SlackMessage, context: AsyncBoltContext) -> bool:
    """An unmentioned thread reply: answered when the bot answered this person here (or anyone, if configured)."""
    slack = answering.slack_settings
    if not incoming.in_thread or not channel_allowed(answering, incoming.channel):
        return False
    if not slack.follow_ups and slack.thread_requires_mention:
        return False
    if not answering.runner.answers_follow_ups(incoming.channel):
        return False
    try:
        raw = await answering.threads.messages(incoming.channel, incoming.thread_ts)
    except SlackApiError as exc:
        log.info("slack: thread history unavailable (%s); follow-up ignored", describe(exc))
        return False
    earlier = [m for m in raw if m.get("ts") != incoming.ts]
    bot_spoke = any(m.get("user") == context.bot_user_id or (context.bot_id and m.get("bot_id") == context.bot_id)
                    for m in earlier)
    if not bot_spoke:
        return False
    if not slack.thread_requires_mention:
        return True
    return incoming.user in askers(earlier, context.bot_user_id, context.bot_id)


async def handle(answering: Answering, incoming: SlackMessage | None, slack: Slack) -> None:
    if incoming is None:
        return
    if not incoming.is_dm:
        if not incoming.mentioned:
            if not await _follow_up_allowed(answering, incoming, slack.context):
                return
        elif not channel_allowed(answering, incoming.channel):
            if await answering.seen.claim_message(incoming.channel, incoming.ts):
                with speaking(answering.askdesk.language_of(incoming.text)):
                    note = answering.askdesk.prompts.render("channel_not_enabled")
                await _note(slack.client, incoming, note)
            return
    if not await answering.seen.claim_message(incoming.channel, incoming.ts):
        log.debug("slack: %s:%s already answered", incoming.channel, incoming.ts)
        return
    await answer(answering, incoming, slack)


async def _note(client: AsyncWebClient, incoming: SlackMessage, text: str) -> None:
    await send_note(client, channel=incoming.channel, thread_ts=incoming.thread_ts, user=incoming.user,
                    is_dm=incoming.is_dm, text=text)


async def answer(answering: Answering, incoming: SlackMessage, slack: Slack) -> None:
    context = slack.context
    # Slack's retry of a question whose answer died with its process: that stream gets a note first
    with speaking(answering.askdesk.language_of(incoming.text)):  # in the question's language
        restarted = answering.askdesk.prompts.render("answer_restarted")
    await answering.streams.close_abandoned(slack.client, lambda _lang: restarted, channel=incoming.channel,
                                            question_ts=incoming.ts)
    where = None if incoming.is_dm else incoming.channel
    privacy = answering.runner.privacy(incoming.text, channel=where)  # the rules every surface shares
    # asked privately in a DM: answered there as usual, but kept nowhere and never passed on
    public = None if privacy.private else SlackReply(
        slack.client, channel=incoming.channel, thread_ts=incoming.thread_ts, team_id=incoming.team,
        streaming=answering.slack_settings.streaming, features=answering.features, say_stream=slack.say_stream,
        set_status=slack.set_status, prompts=answering.askdesk.prompts, user=incoming.user, is_dm=incoming.is_dm,
    )
    if public is not None:
        public.track(answering.streams, incoming.ts)  # its stream is recorded while open (bot/slack/reply.py)
        public.asked_ts = incoming.ts  # what "Search the documents anyway" reads back, when offered
    reply = public or EphemeralReply(ephemeral_sender(slack.client, channel=incoming.channel, user=incoming.user,
                                                      thread_ts=incoming.thread_ts), answering.askdesk.prompts)
    raw: list[dict] = []

    async def load_history() -> list[ChatMessage]:
        """The thread so far (the Slack thread is the conversation), read once the asker sees progress."""
        history: list[ChatMessage] = []
        if incoming.in_thread:
            try:
                history, found = await answering.threads.chat_history(
                    incoming.channel, incoming.thread_ts, before_ts=incoming.ts, bot_user_id=context.bot_user_id,
                    bot_id=context.bot_id,
                )
                raw.extend(found)
            except Exception as exc:
                log.warning("slack: conversations.replies failed (%s); answering without history", describe(exc))
        if slack.set_title is not None and not any(m.role == "user" for m in history):
            await _set_title(slack, incoming.text)
        return history

    def notice_shown(notice: str) -> bool:
        """The thread already shows this notice (also after a restart: Slack keeps the thread)."""
        return any(notice in str(m.get("blocks") or "") or notice in (m.get("text") or "") for m in raw)

    delivery = await answering.runner.run(Incoming(
        surface="slack", text=privacy.text, thread_id=incoming.thread_id, user_id=incoming.user,
        private=not privacy.stored, load_attachments=_attachments(answering, incoming, slack),
        load_history=load_history, collection=answering.slack_settings.channel_collections.get(incoming.channel),
        channel=where, load_email=email_loader(slack.client, incoming.user),
        notice_shown=notice_shown, claims=(message_key(incoming.channel, incoming.ts),
                                           *filter(None, [context.get("event_claim")])),
    ), reply)
    if delivery is None or public is None:  # a private answer is in no one's thread history
        return
    answering.threads.remember(
        incoming.channel, incoming.thread_ts,
        {"ts": incoming.ts, "user": incoming.user, "text": incoming.text if not incoming.mentioned
         else f"<@{context.bot_user_id}> {incoming.text}"},
        *({"ts": ts, "user": context.bot_user_id, "bot_id": context.bot_id, "text": delivery.result.answer}
          for ts in public.posted_ts[:1]),
    )


def _attachments(answering: Answering, incoming: SlackMessage,
                 slack: Slack) -> Callable[[], Awaitable[list[Attachment]]] | None:
    """The message's files, fetched with the bot token when the turn needs them (None: no files)."""
    if not incoming.files:
        return None
    remote = remote_files(incoming.files, token=slack.client.token, api_url=answering.slack_settings.api_url)
    return lambda: fetch_files(remote, answering.askdesk, "slack")


async def _set_title(slack: Slack, text: str) -> None:
    title = text if len(text) <= 60 else text[:59].rstrip() + "…"
    try:
        await slack.set_title(title)
    except Exception as exc:
        log.info("slack: thread title unavailable (%s)", describe(exc))
