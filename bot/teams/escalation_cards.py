"""The Adaptive Cards of "Ask a person" on Teams: the button on an answer (and on the 👎 reply),
the question as posted in the escalation conversation, and "Save as answer" under a relayed reply;
and "Search the documents anyway" under a refusal.

Buttons are `Action.Submit`: pressing one sends a message activity whose `value` is the button's
data (no text), which reaches the bot in every scope, mention or not. The data says which action
(`askdesk`), and carries what the press needs: the answer's id, and on an answer's own button
the question and askdesk's attempt (Teams gives a bot no way to read a conversation back, and a
private or `store_text`-less answer keeps no question anywhere else), and the answer's language
(`l`: the notes of a press are said in it, bot/note_language.py).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from microsoft_teams.api import AdaptiveCardAttachment, Attachment, card_attachment
from microsoft_teams.cards import ActionSet, AdaptiveCard, SubmitAction, TextBlock

from agent.state.base import Escalation
from bot.note_language import LANGUAGE_KEY
from bot.teams.escape import teams_text

CARD_VERSION = "1.5"
ESCALATE = "escalate"
SAVE_ANSWER = "save_answer"
SEARCH_ANYWAY = "search_anyway"  # under a refusal (bot/teams/anyway.py)
DATA_CHARS = 3000  # each of the question and the attempt, in a button's data


def action_of(value: Any) -> tuple[str, dict[str, Any]] | None:
    """(action, data) of a pressed askdesk button; None for anything else."""
    if isinstance(value, dict) and value.get("askdesk") in (ESCALATE, SAVE_ANSWER, SEARCH_ANYWAY):
        return str(value["askdesk"]), value
    return None


def _button(title: str, data: dict[str, Any]) -> Attachment:
    card = AdaptiveCard(version=CARD_VERSION, body=[ActionSet(actions=[SubmitAction(title=title, data=data)])])
    return card_attachment(AdaptiveCardAttachment(content=card))


def escalate_button(prompts: Any, *, answer_id: str | None, question: str | None = None,
                    attempt: str | None = None, message_id: str | None = None,
                    language: str | None = None) -> Attachment:
    """"Ask a person", on the answer itself (question and attempt in its data) or after a 👎
    (the rated message's id: the question is read back from the conversation's memory). The
    asker is not in the data: a press is checked against the answer's record."""
    data: dict[str, Any] = {"askdesk": ESCALATE, "a": answer_id}
    if question is not None:
        data |= {"q": question[:DATA_CHARS], "t": (attempt or "")[:DATA_CHARS]}
    if message_id:
        data["m"] = message_id
    if language:
        data[LANGUAGE_KEY] = language
    return _button("🙋 " + prompts.text("escalate_button"), data)


def anyway_button(prompts: Any, *, answer_id: str, question: str, language: str | None = None) -> Attachment:
    """"Search the documents anyway", under a refusal: the question rides in the data (Teams
    gives a bot no way to read it back)."""
    return _button("🔎 " + prompts.text("search_anyway_button"),
                   {"askdesk": SEARCH_ANYWAY, "a": answer_id, "q": question[:DATA_CHARS],
                    **({LANGUAGE_KEY: language} if language else {})})


def save_button(prompts: Any, escalation_id: str) -> Attachment:
    return _button("💾 " + prompts.text("save_answer_button"), {"askdesk": SAVE_ANSWER, "e": escalation_id})


def deep_link(conversation: str) -> str | None:
    """A link to a channel reply chain (`19:…@thread.tacv2;messageid=ROOT`); chats have none a
    bot can build, so they are named by their id."""
    channel, _, root = conversation.partition(";messageid=")
    if not root or not channel.startswith("19:"):
        return None
    return f"https://teams.microsoft.com/l/message/{quote(channel, safe='')}/{quote(root, safe='')}"


def escalation_card(e: Escalation, prompts: Any) -> Attachment:
    """The question, askdesk's attempt, its sources and where it was asked (the message's text
    above it says who asked)."""
    body: list[Any] = [
        TextBlock(text=f"**{teams_text(prompts.text('escalation_question'))}**", wrap=True),
        TextBlock(text=teams_text(e.question), wrap=True, spacing="None"),
    ]
    if e.attempt:
        body += [TextBlock(text=f"**{teams_text(prompts.text('escalation_attempt'))}**", wrap=True),
                 TextBlock(text=teams_text(e.attempt), wrap=True, spacing="None")]
    footer = [teams_text(s) for s in e.sources[:8]]
    link = e.link or deep_link(e.conversation)
    label = teams_text(prompts.text("escalation_link"))
    footer.append(f"[{label}]({link})" if link else f"{label}: {teams_text(e.conversation)}")
    body.append(TextBlock(text=" · ".join(footer), wrap=True, is_subtle=True, size="Small"))
    return card_attachment(AdaptiveCardAttachment(content=AdaptiveCard(version=CARD_VERSION, body=body)))
