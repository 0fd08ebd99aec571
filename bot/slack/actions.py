"""Button clicks: answer feedback (👍/👎) and "Share in channel" of /facility results."""

from __future__ import annotations

import json
import re
import logging
from typing import TYPE_CHECKING

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.feedback import Feedback
from bot.slack.blocks import FACILITY_SHARE, FEEDBACK_DOWN, FEEDBACK_UP

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = logging.getLogger("askdesk.slack")


def register(bot: "SlackBot") -> None:
    @bot.app.action(re.compile(f"^({FEEDBACK_UP}|{FEEDBACK_DOWN})$"))
    async def feedback(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient) -> None:
        async with bot.working():
            await ack()
            await record_feedback(bot, body, action, client)

    @bot.app.action(FACILITY_SHARE)
    async def share(ack: AsyncAck, body: dict, action: dict, respond: AsyncRespond) -> None:
        async with bot.working():
            await ack()
            from bot.slack.commands import run_and_respond

            user = (body.get("user") or {}).get("id")
            await run_and_respond(bot, action.get("value") or "", respond, shared_by=user or "someone")
            await respond(delete_original=True)


async def record_feedback(bot: "SlackBot", body: dict, action: dict, client: AsyncWebClient) -> None:
    try:
        value = json.loads(action.get("value") or "{}")
    except json.JSONDecodeError:
        value = {}
    user = (body.get("user") or {}).get("id") or "unknown"
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = message.get("thread_ts") or container.get("thread_ts") or message.get("ts")
    answer_id = value.get("a")
    await bot.feedback.add(Feedback(
        rating="up" if action.get("action_id") == FEEDBACK_UP else "down",
        user_id=user, surface="slack", channel=channel, thread=thread, answer_id=answer_id,
        route=value.get("r"), sources=list(value.get("s") or []),
        question=bot.questions.get(answer_id or "") if bot.settings.store_text else None,
    ))
    if channel:
        try:
            await client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread,
                text="Thanks for the feedback! It helps us improve the answers.",
            )
        except SlackApiError as exc:
            log.info("slack: feedback thanks not sent (%s)", exc.response.get("error"))
