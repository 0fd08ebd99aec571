"""Confirm / Cancel pressed on Slack, under an action askdesk proposed (bot/confirm.py; the
buttons: bot/slack/confirm_buttons.py).

A press by the asker replaces the buttons' message with what was decided (so it offers no
second press) and runs the decision through the turn runner, answered in the thread like a
question (privately when the proposal was private); anyone else gets a note only they see.
The note and the decision's label are said in the language of the question the action answers.
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from agent.prompts import speaking
from bot.confirm import CANCEL, CONFIRM, confirmation_of, press_refused
from bot.note_language import note_language
from bot.slack.escape import safe_mrkdwn
from bot.slack.people import email_loader
from bot.slack.private import EphemeralReply, ephemeral_sender
from bot.slack.reply import SlackReply, describe, send_note
from bot.turn import Incoming

if TYPE_CHECKING:
    from bot.slack.services import Answering

log = logging.getLogger("askdesk.slack")

USER_ID = re.compile(r"[UW][A-Z0-9]{2,}")  # a Slack user id, safe to write as a mention


def register(app: AsyncApp) -> None:
    @app.action(re.compile(f"^({CONFIRM}|{CANCEL})$"))
    async def decide(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, respond: AsyncRespond,
                     context: AsyncBoltContext, answering: Any) -> None:
        await ack()
        await pressed(body, action, client, respond, context, answering)


async def pressed(body: dict, action: dict, client: AsyncWebClient, respond: AsyncRespond,
                  context: AsyncBoltContext, answering: "Answering") -> None:
    prompts = answering.askdesk.prompts
    user = (body.get("user") or {}).get("id") or ""
    container, message = body.get("container") or {}, body.get("message") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    thread = container.get("thread_ts") or message.get("thread_ts") or container.get("message_ts")
    confirmation = confirmation_of(str(action.get("action_id")), action.get("value"))
    if not channel or not thread or confirmation is None:
        return
    is_dm, private = channel.startswith("D"), bool(container.get("is_ephemeral"))
    with speaking(note_language(prompts, answering.askdesk.clear_language(confirmation.action.question))):
        refused = press_refused(prompts, user, confirmation.action)
        label = safe_mrkdwn(prompts.text("action_confirm_button" if confirmation.confirmed
                                         else "action_cancel_button"))
    if refused is not None:
        await send_note(client, channel=channel, thread_ts=thread, user=user, is_dm=is_dm, text=refused)
        return
    try:  # the buttons give way to the decision, so the message offers no second press
        await respond(replace_original=True, text=f"{label}: <@{user}>" if USER_ID.fullmatch(user) else label)
    except Exception as exc:
        log.info("slack: the Confirm / Cancel buttons stay (%s)", describe(exc))
    if private:
        reply: Any = EphemeralReply(ephemeral_sender(client, channel=channel, user=user, thread_ts=thread), prompts)
    else:
        reply = SlackReply(client, channel=channel, thread_ts=thread, team_id=context.team_id, streaming=False,
                           features=answering.features, prompts=prompts, user=user, is_dm=is_dm)
    await answering.runner.run(Incoming(
        surface="slack", text=confirmation.action.question, thread_id=confirmation.action.thread_id, user_id=user,
        history=[], collection=confirmation.action.collection, private=private, confirmation=confirmation,
        channel=None if is_dm else channel, load_email=email_loader(client, user)), reply)
