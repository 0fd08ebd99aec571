"""Answers only the asker sees, in Slack: ephemeral messages.

Two ways in. In a channel or group DM whose mode is `private`, or for a question that starts
with ASKDESK_PRIVATE_WORD ("@askdesk privately …"), the answer is posted with
`chat.postEphemeral` into the mention's thread (bot/slack/events.py). The slash command
ASKDESK_SLACK_PRIVATE_COMMAND (`/askdesk how much leave do I have?`) keeps even the question
private: acked at once with "Thinking…", which the answer replaces through the command's
`response_url` — in any channel, the bot need not be a member.

Ephemeral messages cannot be streamed or edited, so the answer arrives whole, with its sources,
feedback buttons and a line saying only the asker sees it. Slack leaves them out of
`conversations.replies`, so a private answer never enters a thread's history, and the service
is told not to store it either (`private=True`): every private question stands alone.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from agent.prompts import speaking
from bot.slack.blocks import Block, answer_messages, fallback_text, feedback_value, plain
from bot.slack.confirm_buttons import offer
from bot.slack.escape import safe_mrkdwn
from bot.note_language import locale_language
from bot.slack.people import email_loader, user_locale
from bot.turn import Incoming

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from bot.slack.services import Answering
    from bot.turn import Delivery

log = logging.getLogger("askdesk.slack")

# posts one ephemeral message (escaped text, blocks); returns its ts when Slack gives one
Send = Callable[[str, list[Block]], Awaitable[str | None]]


def ephemeral_sender(client: AsyncWebClient, *, channel: str, user: str, thread_ts: str | None) -> Send:
    """chat.postEphemeral to `user`, in the thread."""
    async def send(text: str, blocks: list[Block]) -> str | None:
        response = await client.chat_postEphemeral(channel=channel, user=user, thread_ts=thread_ts, text=text,
                                                   blocks=blocks or None)
        return response.get("message_ts")

    return send


def response_sender(respond: AsyncRespond) -> Send:
    """Through a slash command's response_url: the first message replaces the "Thinking…" ack."""
    first = True

    async def send(text: str, blocks: list[Block]) -> str | None:
        nonlocal first
        await respond(text=text, blocks=blocks or None, response_type="ephemeral", replace_original=first)
        first = False
        return None

    return send


class EphemeralReply:
    """The turn runner's `Reply` for an answer only the asker sees: nothing streams, the whole
    answer arrives in one (or, when long, several) ephemeral messages."""

    streams = False

    def __init__(self, send: Send, prompts: "PromptSet") -> None:
        self.send = send
        self.prompts = prompts

    async def progress(self, step: str) -> None:
        """Ephemeral messages cannot be updated: no progress lines (the slash command's ack says "Thinking…")."""

    async def text(self, delta: str) -> None:
        """Not streamed: the answer arrives whole."""

    async def finish(self, delivery: "Delivery") -> str | None:
        result = delivery.result
        value = feedback_value(delivery.answer_id, result.route, result.references, result.language) \
            if delivery.feedback and result.action is None else None  # a proposal is rated once it ran
        messages = answer_messages(result.answer, result.references, notice=delivery.notice, value=value,
                                   prompts=self.prompts)
        messages[-1].append(private_label(self.prompts))
        first: str | None = None
        for blocks in messages:
            text = fallback_text("\n".join(b.get("text", "") for b in blocks if b.get("type") == "markdown"))
            ts = await self.send(text, blocks)
            first = first or ts
        if result.action is not None:  # Confirm / Cancel, only the asker sees them (bot/slack/confirm_buttons.py)
            await offer(self.send, result.action, self.prompts)
        return first

    async def note(self, text: str) -> None:
        try:
            await self.send(safe_mrkdwn(text), [])
        except Exception as exc:
            log.warning("slack: could not send a private note (%s)", type(exc).__name__)

    async def apologise(self, text: str) -> None:
        await self.send(safe_mrkdwn(text), [])


def private_label(prompts: "PromptSet") -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": plain(f":lock: {prompts.text('private_label')}")}]}


USAGE_LOCALE_WAIT_S = 1.0  # the ack must leave within Slack's 3 seconds


def register(app: AsyncApp, command: str) -> None:
    """The private slash command (`/askdesk …`), when one is configured."""
    if not command:
        return

    @app.command(command)
    async def ask_privately(ack: AsyncAck, body: dict, respond: AsyncRespond, answering: Any,
                            client: AsyncWebClient) -> None:
        prompts = answering.askdesk.prompts
        text = (body.get("text") or "").strip()
        if not text:  # nothing typed to tell a language by: the person's Slack language
            locale = await user_locale(client, str(body.get("user_id") or ""), wait=USAGE_LOCALE_WAIT_S)
            with speaking(locale_language(prompts, locale)):
                await ack(text=safe_mrkdwn(prompts.text("private_usage", command=command)),
                          response_type="ephemeral")
            return
        channel, user = str(body.get("channel_id") or ""), str(body.get("user_id") or "")
        allowed = answering.slack_settings.channels
        with speaking(answering.askdesk.language_of(text)):  # in the question's language
            if not channel.startswith("D") and allowed and channel not in allowed:
                await ack(text=prompts.render("channel_not_enabled"), response_type="ephemeral")
                return
            await ack(text=prompts.render("thinking"), response_type="ephemeral")
        await ask(answering, text, channel=channel, user=user, reply=EphemeralReply(response_sender(respond), prompts),
                  client=client)


async def ask(answering: "Answering", text: str, *, channel: str, user: str, reply: EphemeralReply,
              client: AsyncWebClient) -> None:
    """A private question through the turn runner: the asker's own, stored nowhere."""
    await answering.runner.run(Incoming(
        surface="slack", text=text, thread_id=f"{channel}:private:{user}", user_id=user, private=True,
        collection=answering.slack_settings.channel_collections.get(channel),
        channel=None if channel.startswith("D") else channel, load_email=email_loader(client, user),
    ), reply)
