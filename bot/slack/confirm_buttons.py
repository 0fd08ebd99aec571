"""Confirm / Cancel on Slack under an action askdesk proposed (bot/confirm.py): the proposal is
the answer; the buttons follow it in a message of their own in the same thread (ephemeral when
the answer was), each carrying the action. A press: bot/slack/confirm.py."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from agent.answers import PendingAction
from agent.prompts import default_prompts
from bot.confirm import CANCEL, CONFIRM, value_of
from bot.slack.blocks import BUTTON_VALUE_CHARS, Block, plain

if TYPE_CHECKING:
    from agent.prompts import PromptSet

log = logging.getLogger("askdesk.slack")

CONFIRM_BLOCK_ID = "askdesk_confirm"

# posts one message (fallback text, blocks) where the proposal was answered
Post = Callable[[str, list[Block]], Awaitable[Any]]


def confirm_blocks(action: PendingAction, prompts: "PromptSet") -> list[Block]:
    """Confirm / Cancel carrying `action`; a note instead when it is too long for a button."""
    value = value_of(action)
    if len(value) > BUTTON_VALUE_CHARS:
        return [{"type": "context", "elements": [{"type": "mrkdwn", "text": plain(prompts.text("action_too_long"))}]}]

    def button(action_id: str, label: str, style: str | None) -> Block:
        return {"type": "button", "action_id": action_id, "value": value,
                "text": {"type": "plain_text", "text": label, "emoji": True}, **({"style": style} if style else {})}

    return [{"type": "actions", "block_id": CONFIRM_BLOCK_ID, "elements": [
        button(CONFIRM, prompts.text("action_confirm_button"), "primary"),
        button(CANCEL, prompts.text("action_cancel_button"), None)]}]


async def offer(post: Post, action: PendingAction, prompts: "PromptSet | None") -> None:
    """The buttons under a delivered proposal (a failure is logged: the answer is out)."""
    prompts = prompts or default_prompts()
    text = f"{prompts.text('action_confirm_button')} / {prompts.text('action_cancel_button')}"
    try:
        await post(text, confirm_blocks(action, prompts))
    except Exception as exc:
        log.warning("slack: the Confirm / Cancel buttons were not posted (%s)", type(exc).__name__)


def thread_poster(client: Any, channel: str, thread_ts: str) -> Post:
    """Posts into the proposal's thread (a public answer)."""
    async def post(text: str, blocks: list[Block]) -> Any:
        return await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text, blocks=blocks)

    return post
