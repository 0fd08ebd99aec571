"""Who a Slack user is, for the knowledge sources' audiences: their email, from `users.info`
(the app needs the `users:read.email` scope; without it the asker is matched by user id)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable


def email_loader(client: Any, user: str) -> Callable[[], Awaitable[str | None]]:
    async def load() -> str | None:
        found = (await client.users_info(user=user)).get("user") or {}
        return (found.get("profile") or {}).get("email") or None

    return load
