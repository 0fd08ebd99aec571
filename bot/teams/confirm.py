"""Confirm / Cancel pressed on Teams, under an action askdesk proposed (bot/confirm.py; the card:
bot/teams/confirm_card.py).

A press is a message activity whose `value` is the button's data. The asker's decision runs
through the turn runner and is answered in the same conversation like a question (to the asker
alone when the proposal was private); anyone else gets a note only they see, and nothing runs.
The service refuses a second decision of the same action, so a card pressed twice runs once.
The note is said in the language of the question the action answers.
"""

from __future__ import annotations

from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from agent.prompts import speaking
from bot.confirm import CANCEL, CONFIRM, confirmation_of, press_refused
from bot.note_language import note_language
from bot.teams.answer import TeamsReply
from bot.teams.incoming import TeamsMessage
from bot.teams.private import private_note
from bot.turn import Incoming as TurnIncoming

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot


def pressed(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage) -> Coroutine[Any, Any, None] | None:
    """The work of a Confirm / Cancel press; None when the activity is not one."""
    value = ctx.activity.value
    if not isinstance(value, dict) or value.get("askdesk") not in (CONFIRM, CANCEL):
        return None
    return decide(bot, ctx, incoming, value)


async def decide(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, value: dict[str, Any]) -> None:
    confirmation = confirmation_of(str(value["askdesk"]), value.get("action"))
    if confirmation is None:
        return
    with speaking(note_language(bot.prompts, bot.askdesk.clear_language(confirmation.action.question))):
        refused = press_refused(bot.prompts, incoming.user_id, confirmation.action)
    if refused is not None:
        await private_note(bot, ctx, incoming, refused)
        return
    action, private = confirmation.action, value.get("p") is True
    await bot.runner.run(TurnIncoming(
        surface="teams", text=action.question, thread_id=incoming.conversation_id, user_id=incoming.user_id,
        collection=action.collection, private=private, confirmation=confirmation,
        channel=None if incoming.personal else incoming.place), TeamsReply(bot, ctx, incoming, private=private))
