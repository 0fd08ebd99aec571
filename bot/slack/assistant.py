"""The assistant pane: a greeting and suggested prompts when a thread starts.

Messages typed in the pane arrive as DM thread replies and are answered by events.py
(status, title and streaming live there). Workspaces without the assistant feature never
send these events, and the status/title calls fall back silently, so plain DMs just work.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

if TYPE_CHECKING:
    from bot.slack.app import SlackBot

log = logging.getLogger("askdesk.slack")

GREETING = (
    "Hi{name}! I answer questions from our documents, with sources, and I can find "
    "facilities near a place. Ask away, or pick a suggestion below."
)


def register(bot: "SlackBot") -> None:
    @bot.app.event("assistant_thread_started")
    async def thread_started(event: dict, context: AsyncBoltContext, client: AsyncWebClient) -> None:
        async with bot.working():
            thread = event.get("assistant_thread") or {}
            channel, thread_ts = thread.get("channel_id"), thread.get("thread_ts")
            if not channel or not thread_ts:
                return
            user = thread.get("user_id")
            await client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, text=GREETING.format(name=f" <@{user}>" if user else ""),
            )
            prompts = [{"title": p if len(p) <= 75 else p[:74] + "…", "message": p} for p in bot.settings.slack_suggested_prompts[:4]]
            if not prompts:
                return
            try:
                await client.assistant_threads_setSuggestedPrompts(
                    channel_id=channel, thread_ts=thread_ts, title="Try asking", prompts=prompts,
                )
            except SlackApiError as exc:
                log.info("slack: suggested prompts unavailable (%s)", exc.response.get("error"))

    @bot.app.event("assistant_thread_context_changed")
    async def context_changed() -> None:
        """The user switched channels with the pane open; answers do not depend on it."""
