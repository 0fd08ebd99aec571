"""Button clicks: answer feedback (👍/👎) and "Share in channel" of a registry command's result.

No turn is around a click: its thanks, comment box and "Share in channel" copy are said in the
language the button carries (the answer's, bot/note_language.py)."""

from __future__ import annotations

import logging
import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from agent.prompts import speaking
from bot.note_language import pressed_language
from bot.slack.blocks import FEEDBACK_DOWN, FEEDBACK_UP, RECORDS_SHARE, action_value, escalate_button, note_blocks
from bot.slack.commands import run_and_respond
from bot.slack.comments import open_comment_box
from bot.slack.escalation import escalate_value
from bot.slack.reply import describe
from bot.turn import TurnRunner

log = logging.getLogger("askdesk.slack")


def register(app: AsyncApp) -> None:
    @app.action(re.compile(f"^({FEEDBACK_UP}|{FEEDBACK_DOWN})$"))
    async def feedback(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, runner: Any) -> None:
        await ack()
        await record_feedback(body, action, client, runner)

    @app.action(RECORDS_SHARE)
    async def share(ack: AsyncAck, body: dict, action: dict, respond: AsyncRespond, runner: Any) -> None:
        await ack()
        value = action_value(action)
        found = runner.askdesk.capabilities().command(str(value.get("c") or ""))
        if found is None:
            return
        user = (body.get("user") or {}).get("id")
        with speaking(pressed_language(runner.prompts, value)):
            await run_and_respond(runner, found[1], str(value.get("q") or ""), respond, shared_by=user or "someone")
        await respond(delete_original=True)


async def record_feedback(body: dict, action: dict, client: AsyncWebClient, runner: TurnRunner) -> None:
    value = action_value(action)
    user = (body.get("user") or {}).get("id") or "unknown"
    container = body.get("container") or {}
    message = body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = message.get("thread_ts") or container.get("thread_ts") or message.get("ts")
    record = await runner.record_feedback(
        rating="up" if action.get("action_id") == FEEDBACK_UP else "down", user_id=user, surface="slack",
        channel=channel, thread=thread, answer_id=value.get("a"), route=value.get("r"),
        sources=list(value.get("s") or []))
    with speaking(pressed_language(runner.prompts, value)) as lang:  # the answer's language
        await _acknowledge(body, value, client, runner, record, channel=channel, thread=thread, user=user,
                           down=action.get("action_id") == FEEDBACK_DOWN, lang=lang)


async def _acknowledge(body: dict, value: dict, client: AsyncWebClient, runner: TurnRunner, record: Any, *,
                       channel: str | None, thread: str | None, user: str, down: bool, lang: str) -> None:
    """The comment box after a 👎, and the private thanks (with "Ask a person" where it may be pressed)."""
    container, message = body.get("container") or {}, body.get("message") or {}
    public = record is not None and not record.private and not container.get("is_ephemeral")
    if down and public:  # a comment box (a private answer keeps no comment); the 👎 is stored already
        await open_comment_box(client, body.get("trigger_id"), value.get("a"), runner.prompts)
    if channel:
        thanks = runner.prompts.render("feedback_thanks")
        blocks = note_blocks(thanks)
        # a 👎 of the asker (or an admin) on a public answer: ask a person, when a channel is reachable
        if down and public and runner.offers_escalation("slack", record, user):
            blocks.append({"type": "actions", "elements": [escalate_button(escalate_value(
                value.get("a"), container.get("message_ts") or message.get("ts"), thread,
                lang), runner.prompts)]})
        try:
            await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread, text=thanks, blocks=blocks)
        except Exception as exc:
            log.info("slack: feedback thanks not sent (%s)", describe(exc))
