"""Who a Slack user is, from `users.info`: their email, for the knowledge sources' audiences (the
app needs the `users:read.email` scope; without it the asker is matched by user id), and their
locale ("es-LA", asked for with `include_locale`), for the notes said outside a turn (a welcome,
a short slash command: bot/note_language.py)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Awaitable, Callable

from bot.cache import bounded

log = logging.getLogger("askdesk.slack")

LOCALE_WAIT_S = 3.0  # a welcome or an acknowledgement is not held up longer for its language
# A person's Slack language changes seldom, and App Home opens and slash commands come often
# (users.info is rate-limited per workspace): answers are kept an hour, per workspace (the API
# and the token that asked) and user. Bolt makes a client per request, so not per client.
LOCALE_TTL_S = 3600.0
_locales = bounded(10_000, LOCALE_TTL_S)  # (API, token, user) -> locale or None


def email_loader(client: Any, user: str) -> Callable[[], Awaitable[str | None]]:
    async def load() -> str | None:
        found = (await client.users_info(user=user)).get("user") or {}
        return (found.get("profile") or {}).get("email") or None

    return load


async def user_locale(client: Any, user: str | None, wait: float = LOCALE_WAIT_S) -> str | None:
    """`user`'s Slack locale (`user.locale` of `users.info` with `include_locale`, kept an hour);
    None when Slack does not say, is slow or fails: the note is then said in English, never held
    up or lost."""
    if not user:
        return None
    key = (str(getattr(client, "base_url", "")), str(getattr(client, "token", "")), user)
    if key in _locales:
        return _locales[key]
    try:
        found = (await asyncio.wait_for(client.users_info(user=user, include_locale=True), wait)).get("user")
    except Exception as exc:  # not kept: the next note asks again
        log.info("slack: no locale for a user (%s)", type(exc).__name__)
        return None
    locale = (found or {}).get("locale")
    _locales[key] = locale = locale if isinstance(locale, str) else None
    return locale
