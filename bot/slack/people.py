"""Who a Slack user is, from `users.info`: their email, for the knowledge sources' audiences (the
app needs the `users:read.email` scope; without it the asker is matched by user id), and their
locale ("es-LA", asked for with `include_locale`), for the notes said outside a turn (a welcome,
a short slash command: bot/note_language.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

log = logging.getLogger("askdesk.slack")

LOCALE_WAIT_S = 3.0  # a welcome or an acknowledgement is not held up longer for its language


def email_loader(client: Any, user: str) -> Callable[[], Awaitable[str | None]]:
    async def load() -> str | None:
        found = (await client.users_info(user=user)).get("user") or {}
        return (found.get("profile") or {}).get("email") or None

    return load


async def user_locale(client: Any, user: str | None, wait: float = LOCALE_WAIT_S) -> str | None:
    """`user`'s Slack locale (`user.locale` of `users.info` with `include_locale`); None when Slack
    does not say, is slow or fails: the note is then said in English, never held up or lost."""
    if not user:
        return None
    try:
        found = (await asyncio.wait_for(client.users_info(user=user, include_locale=True), wait)).get("user")
    except Exception as exc:
        log.info("slack: no locale for a user (%s)", type(exc).__name__)
        return None
    locale = (found or {}).get("locale")
    return locale if isinstance(locale, str) else None
