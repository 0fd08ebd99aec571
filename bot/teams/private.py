"""Answers only the asker sees, in Teams channels and group chats.

The answer is a targeted message: posted into the conversation (the SDK's
`with_recipient(account, is_targeted=True)`, sent to `…/activities?isTargetedActivity=true`)
and shown to the asker alone. Targeted messages are a Teams preview: where the Bot Connector
refuses one (an HTTP error), the answer goes to a personal chat with the asker instead, created
through the connector (`POST /v3/conversations`), and a 4xx refusal is remembered for the
tenant so its later answers go there directly. When that fails too (the app is not installed
for the user), the conversation gets one line, without the answer, asking them to message
askdesk directly.

Typing indicators stay public: they say only that askdesk is working on something. Nothing of
a private answer is stored (`AskRequest.private`), and the asker is not remembered for
follow-ups without a mention.
"""

from __future__ import annotations

import logging
import warnings
from typing import TYPE_CHECKING, Any

import httpx
from microsoft_teams.api import Account, ConversationAccount, MessageActivityInput, SentActivity, TypingActivityInput
from microsoft_teams.api.clients.conversation import CreateConversationParams

from bot.teams.connector import unreachable
from bot.teams.escape import teams_text

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot
    from bot.teams.incoming import TeamsMessage

log = logging.getLogger("askdesk.teams")


def _tenant(ctx: Any) -> str:
    data = ctx.activity.channel_data
    tenant = getattr(data, "tenant", None) if data is not None else None
    return str(getattr(tenant, "id", None) or getattr(ctx.activity.conversation, "tenant_id", None) or "")


class PrivateSend:
    """Sends a turn's messages to the asker alone (typing indicators as they are)."""

    def __init__(self, bot: "TeamsBot", ctx: Any, incoming: "TeamsMessage") -> None:
        self.bot, self.ctx, self.incoming = bot, ctx, incoming
        self.tenant = _tenant(ctx)
        self.personal_chat: str | None = None  # created on the first fallback, reused for the rest

    async def __call__(self, activity: MessageActivityInput | TypingActivityInput) -> SentActivity:
        if not isinstance(activity, MessageActivityInput):
            return await self.ctx.send(activity)
        if self.personal_chat is None and self.tenant not in self.bot.no_targeted:
            try:
                return await self._targeted(activity)
            except httpx.HTTPStatusError as exc:
                status = exc.response.status_code
                log.info("teams: targeted message refused (HTTP %s); answering in a personal chat", status)
                if status < 500:
                    self.bot.no_targeted.add(self.tenant)
        try:
            return await self._personal(activity)
        except Exception as exc:
            if unreachable(exc):
                raise
            log.warning("teams: no personal chat with the asker (%s); saying so in the conversation",
                        type(exc).__name__)
            return await self.ctx.send(MessageActivityInput(text=teams_text(self.bot.askdesk.prompts.text(
                "private_unavailable"))))

    async def _targeted(self, activity: MessageActivityInput) -> SentActivity:
        recipient = Account(id=self.incoming.user_id, name=self.incoming.user_name)
        with warnings.catch_warnings():  # the SDK marks targeted messages as a preview on every use
            warnings.simplefilter("ignore")
            activity.with_recipient(recipient, is_targeted=True)
            return await self.ctx.send(activity)

    async def _personal(self, activity: MessageActivityInput) -> SentActivity:
        api = self.ctx.api
        if self.personal_chat is None:
            created = await api.conversations.create(CreateConversationParams(
                members=[Account(id=self.incoming.user_id)], tenant_id=self.tenant or None,
                channel_data={"tenant": {"id": self.tenant}} if self.tenant else None))
            self.personal_chat = created.id
        # the same message, addressed to the personal chat (a refused targeted try set the group's)
        activity = activity.model_copy(update={
            "recipient": None, "from_": self.ctx.activity.recipient,
            "conversation": ConversationAccount(id=self.personal_chat, conversation_type="personal")})
        return await api.conversations.create_activity(self.personal_chat, activity)


async def private_note(bot: "TeamsBot", ctx: Any, incoming: "TeamsMessage", text: str) -> None:
    """A note only the sender of `incoming` sees (in a personal chat, simply a reply; elsewhere a
    targeted message, as a private answer goes); never raises."""
    activity = MessageActivityInput(text=teams_text(text))
    try:
        await (ctx.send(activity) if incoming.personal else PrivateSend(bot, ctx, incoming)(activity))
    except Exception as exc:
        log.warning("teams: private note not sent (%s)", type(exc).__name__)
