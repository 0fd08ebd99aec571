"""A Teams message activity, reduced to what the bot decides on: where it came from
(personal chat, channel reply chain, group chat), who sent it, whether it @mentions the bot,
the question with the mention removed, as plain text, and its files (bot/teams/files.py).

Some Teams clients send the user's text as HTML (`<p>who is eligible?&nbsp;</p>`, `<br>`,
`&amp;`), with `textFormat` "plain" or "xml": `plain_text` turns it into the text the user
typed (tags dropped, entities decoded, non-breaking spaces made spaces, paragraphs and line
breaks kept as new lines), so the question, a registry command's name and the size cap see
what the user wrote."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Literal

from microsoft_teams.api import MessageActivity
from microsoft_teams.api.activities.utils import StripMentionsTextOptions

from bot.files import RemoteFile
from bot.teams.files import remote_files

Scope = Literal["personal", "channel", "groupChat"]

_AT_TAG = re.compile(r"</?at\b[^>]*>", re.IGNORECASE)
# markup Teams clients put in a message's text; a bare "<" ("income < 5000") is not one
_HTML_HINT = re.compile(
    r"<(?:p|div|span|br|b|strong|i|em|u|s|strike|del|a|img|ul|ol|li|code|pre|blockquote|h[1-6]|table|tr|td|th"
    r"|font|hr|sup|sub)\b[^<>]*>|&(?:#[0-9]{1,7}|#x[0-9a-f]{1,6}|[a-z][a-z0-9]{1,31});", re.IGNORECASE)
_BLOCKS = {"p", "div", "br", "li", "ul", "ol", "tr", "table", "pre", "blockquote", "hr",
           "h1", "h2", "h3", "h4", "h5", "h6"}
_HIDDEN = {"script", "style", "head", "title", "template"}
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u202f\u205f\u3000]+")


class _TextOf(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in _HIDDEN:
            self._hidden += 1
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_startendtag(self, tag: str, attrs: list) -> None:
        if tag in _BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in _HIDDEN:
            self._hidden = max(0, self._hidden - 1)
        elif tag in _BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.parts.append(data)


def plain_text(text: str | None, *, html: bool = False) -> str:
    """The text a user typed, from a Teams message's `text`. HTML (when `html`, or when it holds
    Teams markup such as `<p>`, `<br>` or `&nbsp;`) becomes plain text: tags go (an `<at>`'s
    name stays), entities are decoded, paragraphs and line breaks become new lines, spaces are
    collapsed within lines and blank lines to one. Plain text only loses `<at>` tags and
    non-breaking spaces."""
    if not text:
        return ""
    if not (html or _HTML_HINT.search(text)):
        return _AT_TAG.sub("", text).replace("\u00a0", " ").strip()
    parser = _TextOf()
    parser.feed(text)
    parser.close()
    lines = [_SPACES.sub(" ", line).strip() for line in "".join(parser.parts).splitlines()]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


@dataclass
class TeamsMessage:
    """A message activity, reduced to what the bot decides on."""

    activity_id: str
    conversation_id: str  # a channel reply chain has its own id (…;messageid=<root>)
    scope: Scope
    user_id: str
    text: str
    mentioned: bool
    from_bot: bool
    files: list[RemoteFile] = field(default_factory=list)
    user_name: str | None = None

    @property
    def personal(self) -> bool:
        return self.scope == "personal"

    @property
    def place(self) -> str:
        """The channel or group chat, for its answer mode: a reply chain's id without `;messageid=…`."""
        return self.conversation_id.split(";", 1)[0]


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


def parse(activity: MessageActivity) -> TeamsMessage:
    mentioned = activity.is_recipient_mentioned()
    text = activity.text or ""
    if mentioned:
        # only the bot's own mention goes; other people's names stay in the question
        from microsoft_teams.api.activities.utils import strip_mentions_text

        text = strip_mentions_text(activity, StripMentionsTextOptions(account_id=activity.recipient.id)) or ""
    text = plain_text(text, html=activity.text_format == "xml")
    return TeamsMessage(
        activity_id=activity.id, conversation_id=activity.conversation.id, scope=_scope(activity),
        user_id=activity.from_.id, text=text, mentioned=mentioned, from_bot=_is_bot(activity),
        files=remote_files(activity.attachments), user_name=activity.from_.name,
    )
