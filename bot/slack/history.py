"""Thread memory: the Slack thread *is* the conversation.

History is read back with `conversations.replies` (bot messages become assistant turns,
mentions of the bot are stripped from user turns), cached for a short while so a quick
follow-up costs no API call, extended locally with each answered turn, and trimmed to
`settings.history_chars` keeping the most recent turns.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from agent.messages import ChatMessage

_MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
MAX_PAGES = 5  # 5 x 200 messages: threads longer than that keep their first 1000 only


def strip_mention(text: str, bot_user_id: str | None) -> str:
    """Remove `<@BOT>` (and `<@BOT|name>`) and tidy the whitespace left behind."""
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(?:\|[^>]*)?>", " ", text)
    return re.sub(r"\s+", " ", text).strip()


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in (text or "")


def trim(messages: list[ChatMessage], budget_chars: int) -> list[ChatMessage]:
    """The most recent turns whose text fits in `budget_chars` (oldest dropped first)."""
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(messages):
        used += len(message.content)
        if used > budget_chars and kept:
            break
        kept.append(message if used <= budget_chars else message.model_copy(
            update={"content": message.content[-budget_chars:]}))
    return list(reversed(kept))


@dataclass
class Thread:
    """One thread's turns as Slack returned them, plus what we learned since."""

    messages: list[dict[str, Any]]
    fetched_at: float = field(default_factory=time.monotonic)


def _is_bot_message(message: dict[str, Any], bot_user_id: str | None, bot_id: str | None) -> bool:
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
        if _is_bot_message(message, bot_user_id, bot_id):
            turns.append(ChatMessage(role="assistant", content=text))
        else:
            text = strip_mention(text, bot_user_id)
            if text:
                turns.append(ChatMessage(role="user", content=text))
    return turns


class ThreadHistory:
    def __init__(self, client: AsyncWebClient, *, ttl_seconds: float = 30.0, max_threads: int = 2000) -> None:
        self.client = client
        self.ttl = ttl_seconds
        self.max_threads = max_threads
        self._cache: dict[tuple[str, str], Thread] = {}

    async def messages(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """Raw messages of a thread, oldest first (cached for `ttl` seconds)."""
        key = (channel, thread_ts)
        cached = self._cache.get(key)
        if cached and time.monotonic() - cached.fetched_at < self.ttl:
            return cached.messages
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
        if len(self._cache) >= self.max_threads:
            oldest = min(self._cache, key=lambda k: self._cache[k].fetched_at)
            del self._cache[oldest]
        self._cache[key] = Thread(collected)
        return collected

    def remember(self, channel: str, thread_ts: str, *turns: dict[str, Any]) -> None:
        """Append turns we just saw or posted, so a cached thread stays current."""
        cached = self._cache.get((channel, thread_ts))
        if cached:
            known = {m.get("ts") for m in cached.messages}
            cached.messages.extend(t for t in turns if t.get("ts") not in known or t.get("ts") is None)

    async def chat_history(
        self, channel: str, thread_ts: str, *, before_ts: str, bot_user_id: str | None,
        bot_id: str | None, budget_chars: int,
    ) -> tuple[list[ChatMessage], list[dict[str, Any]]]:
        """(chat turns before `before_ts` trimmed to budget, the raw thread messages)."""
        raw = await self.messages(channel, thread_ts)
        earlier = [m for m in raw if float(m.get("ts") or 0) < float(before_ts)]
        return trim(to_chat(earlier, bot_user_id, bot_id), budget_chars), raw
