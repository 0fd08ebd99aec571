"""Button clicks: answer feedback (👍/👎) and "Share in channel" of /facility results."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from agent.state.feedback import Feedback, FeedbackStore
from bot.slack.blocks import FACILITY_SHARE, FEEDBACK_DOWN, FEEDBACK_UP
from bot.slack.commands import run_and_respond
from bot.slack.reply import describe
from bot.slack.services import Questions

log = logging.getLogger("askdesk.slack")


def register(app: AsyncApp) -> None:
    @app.action(re.compile(f"^({FEEDBACK_UP}|{FEEDBACK_DOWN})$"))
    async def feedback(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, feedback: FeedbackStore,
                       questions: Questions, askdesk: Any) -> None:
        await ack()
        await record_feedback(body, action, client, feedback, questions, askdesk.prompts.render("feedback_thanks"))

    @app.action(FACILITY_SHARE)
    async def share(ack: AsyncAck, body: dict, action: dict, respond: AsyncRespond, runtime: Any, askdesk: Any) -> None:
        await ack()
        user = (body.get("user") or {}).get("id")
        await run_and_respond(runtime, askdesk.prompts, action.get("value") or "", respond, shared_by=user or "someone",
                              model=askdesk.models.router)
        await respond(delete_original=True)


async def record_feedback(body: dict, action: dict, client: AsyncWebClient, store: FeedbackStore,
                          questions: Questions, thanks: str) -> None:
    try:
        value = json.loads(action.get("value") or "{}")
    except json.JSONDecodeError:
        value = {}
    if not isinstance(value, dict):
        value = {}
    user = (body.get("user") or {}).get("id") or "unknown"
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = message.get("thread_ts") or container.get("thread_ts") or message.get("ts")
    answer_id = value.get("a")
    await store.add(Feedback(
        rating="up" if action.get("action_id") == FEEDBACK_UP else "down",
        user_id=user, surface="slack", channel=channel, thread=thread, answer_id=answer_id,
        route=value.get("r"), sources=list(value.get("s") or []), question=questions.get(answer_id),
    ))
    if channel:
        try:
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread, text=thanks)
        except Exception as exc:
            log.info("slack: feedback thanks not sent (%s)", describe(exc))
