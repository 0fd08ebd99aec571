""""Search the documents anyway" on Slack: the button under a refusal.

A refused question the documents answer is the worst thing a staff assistant can do, and no
off-topic check is perfect; the asker gets the last word. Pressing the button searches the
question and answers it in the same thread (with the "may be outside the documents" note), as if
it had never been refused. The question is read back from the thread by its ts (the button's
value), so nothing is stored for the button; the button is taken off the refusal once pressed,
and a second press (or a second replica's delivery) only gets a note. Only the asker (or an
admin) may press it (bot/permissions.py); anyone else gets a private note and nothing changes.
The notes are said in the refusal's language, which the button carries (bot/note_language.py).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.prompts import speaking
from bot.note_language import pressed_language
from bot.permissions import asker_of, press_refused
from bot.slack.blocks import ANYWAY_BLOCK_ID, SEARCH_ANYWAY, action_value
from bot.slack.history import strip_mention
from bot.slack.people import email_loader
from bot.slack.reply import SlackReply, describe, send_note
from bot.slack.services import Answering
from bot.turn import Incoming

log = logging.getLogger("askdesk.slack")

PRESSED_TTL_S = 30 * 24 * 3600  # one search per refusal, however often the button is pressed


def register(app: AsyncApp) -> None:
    @app.action(SEARCH_ANYWAY)
    async def search_anyway(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient,
                            context: AsyncBoltContext, answering: Answering) -> None:
        await ack()
        await answer_anyway(body, action, client, context, answering)


def _question_ts(action: dict[str, Any]) -> str | None:
    ts = action_value(action).get("m")
    return ts if isinstance(ts, str) else None


async def answer_anyway(body: dict, action: dict, client: AsyncWebClient, context: AsyncBoltContext,
                        answering: Answering) -> None:
    with speaking(pressed_language(answering.askdesk.prompts, action_value(action))):
        await _answer_anyway(body, action, client, context, answering)


async def _answer_anyway(body: dict, action: dict, client: AsyncWebClient, context: AsyncBoltContext,
                         answering: Answering) -> None:
    prompts = answering.askdesk.prompts
    user = (body.get("user") or {}).get("id") or "unknown"
    container, message = body.get("container") or {}, body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    refusal_ts = container.get("message_ts") or message.get("ts")
    asked_ts = _question_ts(action)
    thread = container.get("thread_ts") or message.get("thread_ts") or asked_ts
    if not channel or not refusal_ts or not asked_ts or not thread:
        return
    is_dm = channel.startswith("D")

    async def note(text: str) -> None:
        await send_note(client, channel=channel, thread_ts=thread, user=user, is_dm=is_dm, text=text)

    try:
        history, raw = await answering.threads.chat_history(channel, thread, before_ts=asked_ts,
                                                            bot_user_id=context.bot_user_id, bot_id=context.bot_id)
    except SlackApiError as exc:
        log.warning("slack: the refused question could not be read back (%s)", describe(exc))
        history, raw = [], []
    asked = next((m for m in raw if m.get("ts") == asked_ts), None)
    text = strip_mention(asked.get("text") or "", context.bot_user_id) if asked else ""
    if asked is None or not text:
        await note(prompts.text("search_anyway_lost"))
        return
    # the asker: as stored with the refusal, else the question's author as Slack reports it
    record = await answering.runner.records.by_message(f"{channel}:{thread}", refusal_ts)
    asker = asker_of(record) or asked.get("user")
    refused = press_refused(answering.settings, prompts, "search_anyway", presser=user, owner=asker)
    if refused is not None:
        await note(refused)
        return
    if not await answering.runner.deliveries.first_time(f"anyway:{channel}:{refusal_ts}", ttl_s=PRESSED_TTL_S):
        await note(prompts.text("search_anyway_used"))
        return
    await _take_button_off(client, channel, refusal_ts, message)
    reply = SlackReply(client, channel=channel, thread_ts=thread, team_id=context.team_id, streaming=False,
                  features=answering.features, prompts=prompts, user=user, is_dm=is_dm)
    delivery = await answering.runner.run(Incoming(
        surface="slack", text=text, thread_id=f"{channel}:{thread}", user_id=asker or user, history=history,
        collection=answering.slack_settings.channel_collections.get(channel), search_anyway=True,
        channel=None if is_dm else channel, load_email=email_loader(client, asker or user)), reply)
    if delivery is not None:
        answering.threads.remember(channel, thread, *({"ts": ts, "user": context.bot_user_id, "bot_id": context.bot_id,
                                                       "text": delivery.result.answer} for ts in reply.posted_ts[:1]))


async def _take_button_off(client: AsyncWebClient, channel: str, ts: str, message: dict[str, Any]) -> None:
    """The refusal without its button (best effort: the press is claimed either way). Slack sends
    the pressed message along; without it there is nothing to rewrite."""
    if not message.get("blocks"):
        return
    blocks = [b for b in message["blocks"] if b.get("block_id") != ANYWAY_BLOCK_ID]
    try:
        await client.chat_update(channel=channel, ts=ts, text=message.get("text") or "", blocks=blocks)
    except Exception as exc:
        log.info("slack: the refusal's button stays (%s)", describe(exc))
