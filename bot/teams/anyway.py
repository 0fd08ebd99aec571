""""Search the documents anyway" on Teams: the button under a refusal (bot/teams/escalation_cards.py).

No off-topic check is perfect, and a refused question the documents answer costs a person their
answer: the asker gets the last word. The press carries the question (Teams gives a bot no way to
read a conversation back); it is answered in the same conversation as if it had never been
refused, once per refusal, however often the button is pressed. Only the asker, as recorded with
the refusal (the button's data names the answer, not who may press it), or an admin may press it;
anyone else gets a note only they see, and nothing is searched (bot/permissions.py). The notes are
said in the refusal's language (the button's `l`; a button made before it carried one: the
question's, bot/note_language.py).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from agent.prompts import speaking
from bot.note_language import LANGUAGE_KEY, note_language, spoken
from bot.permissions import asker_of, press_refused
from bot.teams.answer import answer, note
from bot.teams.incoming import TeamsMessage
from bot.teams.private import private_note

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

PRESSED_TTL_S = 30 * 24 * 3600


async def search_anyway(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, data: dict[str, Any]) -> None:
    question = str(data.get("q") or "").strip()
    carried = spoken(bot.prompts, data.get(LANGUAGE_KEY))
    with speaking(carried or note_language(bot.prompts, bot.askdesk.clear_language(question))):
        await _search_anyway(bot, ctx, incoming, data, question)


async def _search_anyway(bot: "TeamsBot", ctx: Any, incoming: TeamsMessage, data: dict[str, Any],
                         question: str) -> None:
    if not question:
        await note(ctx, bot.text("search_anyway_lost"))
        return
    records = bot.runner.records
    record = await (records.get(str(data["a"])) if data.get("a")
                    else records.by_message(incoming.conversation_id, ctx.activity.reply_to_id))
    refused = press_refused(bot.settings, bot.prompts, "search_anyway", presser=incoming.user_id,
                            owner=asker_of(record))
    if refused is not None:
        await private_note(bot, ctx, incoming, refused)
        return
    key = f"anyway:teams:{incoming.conversation_id}:{data.get('a') or question}"
    if not await bot.runner.deliveries.first_time(key, ttl_s=PRESSED_TTL_S):
        await note(ctx, bot.text("search_anyway_used"))
        return
    asker = asker_of(record) or incoming.user_id  # an admin's press answers for the asker
    await answer(bot, ctx, replace(incoming, text=question, files=[], user_id=asker), search_anyway=True)
