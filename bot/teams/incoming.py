"""A Teams message activity, reduced to what the bot decides on: where it came from
(personal chat, channel reply chain, group chat), who sent it, whether it @mentions the bot,
and the question with the mention removed."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from microsoft_teams.api import MessageActivity
from microsoft_teams.api.activities.utils import StripMentionsTextOptions

Scope = Literal["personal", "channel", "groupChat"]

_AT_TAG = re.compile(r"</?at>", re.IGNORECASE)


@dataclass
class Incoming:
    activity_id: str
    conversation_id: str  # a channel reply chain has its own id (…;messageid=<root>)
    scope: Scope
    user_id: str
    text: str
    mentioned: bool
    from_bot: bool

    @property
    def personal(self) -> bool:
        return self.scope == "personal"


def _scope(activity: MessageActivity) -> Scope:
    kind = activity.conversation.conversation_type
    if kind in ("channel", "groupChat"):
        return kind  # type: ignore[return-value]
    if activity.conversation.is_group:
        return "groupChat"
    return "personal"


def _is_bot(activity: MessageActivity) -> bool:
    sender = activity.from_
    if sender.id == activity.recipient.id:
        return True
    role = getattr(sender, "role", None)
    return sender.type == "bot" or role == "bot" or sender.id.startswith("28:")


def parse(activity: MessageActivity) -> Incoming:
    mentioned = activity.is_recipient_mentioned()
    text = activity.text or ""
    if mentioned:
        # only the bot's own mention goes; other people's names stay in the question
        from microsoft_teams.api.activities.utils import strip_mentions_text

        text = strip_mentions_text(activity, StripMentionsTextOptions(account_id=activity.recipient.id)) or ""
    text = _AT_TAG.sub("", text).strip()
    return Incoming(
        activity_id=activity.id, conversation_id=activity.conversation.id, scope=_scope(activity),
        user_id=activity.from_.id, text=text, mentioned=mentioned, from_bot=_is_bot(activity),
    )
