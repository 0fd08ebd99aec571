"""Who a Teams user is, for the knowledge sources' audiences: their email, from the Bot
Connector's conversation member (`GET /v3/conversations/{id}/members/{user}`)."""

from __future__ import annotations

from typing import Any, Awaitable, Callable


def email_loader(ctx: Any, conversation_id: str, user_id: str) -> Callable[[], Awaitable[str | None]]:
    async def load() -> str | None:
        member = await ctx.api.conversations.get_member_by_id(conversation_id, user_id)
        return member.email or member.user_principal_name or None

    return load
