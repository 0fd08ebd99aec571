"""Thread memory: the Slack thread *is* the conversation.

History is read back with `conversations.replies` (bot messages become assistant turns,
mentions of the bot are stripped from user turns), cached for a short while so a quick
follow-up costs no API call, and extended locally with each answered turn. Trimming to
the history budget is the service's job (`Askdesk.answer`), not this module's.
"""

from __future__ import annotations

import re
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agent.messages import ChatMessage
from bot.cache import bounded

MAX_PAGES = 5  # 5 x 200 messages: threads longer than that keep their first 1000 only


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """Remove `<@BOT>` (and `<@BOT|name>`) and tidy the whitespace left behind."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in (text or "")


def is_bot_message(message: dict[str, Any], bot_user_id: str | None, bot_id: str | None) -> bool:
    return bool(
        message.get("bot_id")
        or message.get("subtype") == "bot_message"
        or (bot_user_id and message.get("user") == bot_user_id)
        or (bot_id and message.get("bot_id") == bot_id)
    )


def to_chat(messages: list[dict[str, Any]], bot_user_id: str | None, bot_id: str | None = None) -> list[ChatMessage]:
    turns: list[ChatMessage] = []
    for message in messages:
        text = (message.get("text") or "").strip()
        if not text:
            continue
        if is_bot_message(message, bot_user_id, bot_id):
            turns.append(ChatMessage(role="assistant", content=text))
        else:
            text = strip_mention(text, bot_user_id)
            if text:
                turns.append(ChatMessage(role="user", content=text))
    return turns


def askers(messages: list[dict[str, Any]], bot_user_id: str | None, bot_id: str | None) -> set[str]:
    """Users the bot answered in a thread: it posted there, and they mentioned it."""
    if not any(m.get("user") == bot_user_id or (bot_id and m.get("bot_id") == bot_id) for m in messages):
        return set()
    return {m["user"] for m in messages
            if m.get("user") and not is_bot_message(m, bot_user_id, bot_id) and mentions(m.get("text") or "", bot_user_id)}


class ThreadHistory:
    def __init__(self, client: AsyncWebClient, *, ttl_seconds: float = 30.0, max_threads: int = 2000) -> None:
        self.client = client
        self._cache = bounded(max_threads, ttl_seconds)  # (channel, thread_ts) -> raw messages

    async def messages(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """Raw messages of a thread, oldest first (cached for a short while)."""
        key = (channel, thread_ts)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        collected: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            response = await self.client.conversations_replies(
                channel=channel, ts=thread_ts, limit=200, cursor=cursor
            )
            collected.extend(response.get("messages") or [])
            cursor = (response.get("response_metadata") or {}).get("next_cursor")
            if not response.get("has_more") or not cursor:
                break
        self._cache[key] = collected
        return collected

    def remember(self, channel: str, thread_ts: str, *turns: dict[str, Any]) -> None:
        """Append turns we just saw or posted, so a cached thread stays current."""
        cached = self._cache.get((channel, thread_ts))
        if cached is not None:
            known = {m.get("ts") for m in cached}
            cached.extend(t for t in turns if t.get("ts") not in known or t.get("ts") is None)

    async def chat_history(
        self, channel: str, thread_ts: str, *, before_ts: str, bot_user_id: str | None, bot_id: str | None,
    ) -> tuple[list[ChatMessage], list[dict[str, Any]]]:
        """(chat turns before `before_ts`, the raw thread messages)."""
        raw = await self.messages(channel, thread_ts)
        earlier = [m for m in raw if float(m.get("ts") or 0) < float(before_ts)]
        return to_chat(earlier, bot_user_id, bot_id), raw
