"""A learned answer's review on Teams: a card in the owner's personal chat before its review date,
and what its buttons do.

The card holds the answer in a text field: Confirm keeps it as it is, Save edit keeps what the
owner typed (an Adaptive Card's Action.Submit sends the card's inputs with the press), Retire
deletes it. The edit happens in the card because the owner, an expert, is usually not an admin
and the console admits admins only. The owner is reached through the Bot Connector and tenant of
the press that saved the answer (Teams gives a bot no other way to start a chat); a press is
checked against the owner the answer's file records (bot/permissions.py). The card and its notes
are said in the language of the answer's question (the expert answered it in that one).
"""

from __future__ import annotations

import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from microsoft_teams.api import Account, AdaptiveCardAttachment, MessageActivityInput, card_attachment
from microsoft_teams.api.clients.conversation import CreateConversationParams
from microsoft_teams.cards import ActionSet, AdaptiveCard, SubmitAction, TextBlock, TextInput

from agent.learned import Notifier, Reminder
from agent.prompts import speaking
from bot.note_language import note_language
from bot.permissions import press_refused
from bot.teams.answer import note
from bot.teams.escape import teams_text
from bot.teams.incoming import TeamsMessage
from bot.teams.private import private_note

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")

CONFIRM, EDIT, RETIRE = "learned_confirm", "learned_edit", "learned_retire"
INPUT = "answer"  # the card's text field: its value rides with the Save edit press
CARD_VERSION = "1.5"
INPUT_MAX = 20_000


def review_card(reminder: Reminder, prompts: Any) -> MessageActivityInput:
    """The reminder's text, the answer in an editable field, and Confirm / Save edit / Retire."""
    with speaking(note_language(prompts, reminder.language)):
        return _review_card(reminder, prompts)


def _review_card(reminder: Reminder, prompts: Any) -> MessageActivityInput:
    answer = reminder.answer
    text = prompts.text("learned_review_expired" if reminder.expired else "learned_review_due",
                        question=answer.question, date=f"{reminder.review_by:%Y-%m-%d}", cited=reminder.cited)
    data = {"n": answer.name}
    card = AdaptiveCard(version=CARD_VERSION, body=[
        TextBlock(text=teams_text(text), wrap=True),
        TextInput(id=INPUT, is_multiline=True, value=answer.answer[:INPUT_MAX], max_length=INPUT_MAX,
                  label=prompts.text("learned_edit_label")),
        ActionSet(actions=[
            SubmitAction(title="✅ " + prompts.text("learned_confirm_button"), data={"askdesk": CONFIRM, **data}),
            SubmitAction(title="✏️ " + prompts.text("learned_edit_submit"), data={"askdesk": EDIT, **data}),
            SubmitAction(title="🗑️ " + prompts.text("learned_retire_button"), data={"askdesk": RETIRE, **data}),
        ]),
    ])
    message = MessageActivityInput(text=teams_text(text))
    message.add_attachments(card_attachment(AdaptiveCardAttachment(content=card)))
    return message


def notifier(bot: "TeamsBot") -> Notifier:
    """Send a reminder to a Teams owner in a personal chat with askdesk."""

    async def notify(reminder: Reminder) -> bool:
        owner = reminder.answer.owner
        if owner is None:
            return False
        service_url = owner.service_url or bot.connector[0]
        tenant = owner.tenant or bot.connector[1]
        api = bot.app.api.from_service_url(service_url) if service_url else bot.app.api
        try:
            chat = await api.conversations.create(CreateConversationParams(
                members=[Account(id=owner.id)], tenant_id=tenant or None,
                channel_data={"tenant": {"id": tenant}} if tenant else None))
            await api.conversations.create_activity(chat.id, review_card(reminder, bot.prompts))
        except Exception as exc:
            log.warning("teams: the review message for %s was not sent (%s)", reminder.answer.name, type(exc).__name__)
            return False
        return True

    return notify


def pressed(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage) -> Coroutine[Any, Any, None] | None:
    """The work of a review card's press; None when the activity is not one."""
    value = ctx.activity.value
    if not isinstance(value, dict) or value.get("askdesk") not in (CONFIRM, EDIT, RETIRE):
        return None
    return review(bot, ctx, incoming, value)


async def review(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, value: dict[str, Any]) -> None:
    askdesk, prompts = bot.askdesk, bot.prompts
    answers = askdesk.learned_answers
    name = str(value.get("n") or "")
    answer = answers.get(name) if name else None
    if answer is None:
        await note(ctx, prompts.text("learned_gone"))
        return
    with speaking(note_language(prompts, askdesk.clear_language(answer.question))):
        await _review(bot, ctx, incoming, value, answer)


async def _review(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, value: dict[str, Any], answer: Any) -> None:
    askdesk, prompts = bot.askdesk, bot.prompts
    answers, name = askdesk.learned_answers, answer.name
    refused = press_refused(askdesk.settings, prompts, "review_answer", presser=incoming.user_id,
                            owner=answer.owner.id if answer.owner is not None else None)
    if refused is not None:
        await private_note(bot, ctx, incoming, refused)
        return
    match value["askdesk"]:
        case "learned_confirm":
            confirmed = await answers.confirm(name)
            await note(ctx, prompts.text("learned_confirmed", date=f"{answers.review_by(confirmed):%Y-%m-%d}"))
        case "learned_edit":
            text = str(value.get(INPUT) or "").strip()[:INPUT_MAX]
            edited = await answers.edit(name, text) if text else None
            if edited is not None:
                await note(ctx, prompts.text("learned_edited", date=f"{answers.review_by(edited):%Y-%m-%d}"))
        case "learned_retire":
            await askdesk.remove_learned(name)
            await note(ctx, prompts.text("learned_retired"))
