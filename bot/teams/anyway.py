""""Search the documents anyway" on Teams: the button under a refusal (bot/teams/escalation_cards.py).

No off-topic check is perfect, and a refused question the documents answer costs a person their
answer: the asker gets the last word. The press carries the question (Teams gives a bot no way to
read a conversation back); it is answered in the same conversation as if it had never been
refused, once per refusal, however often the button is pressed.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bot.teams.answer import answer, note
from bot.teams.incoming import Incoming

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

PRESSED_TTL_S = 30 * 24 * 3600


async def search_anyway(bot: "TeamsBot", ctx: Any, incoming: Incoming, data: dict[str, Any]) -> None:
    question = str(data.get("q") or "").strip()
    if not question:
        await note(ctx, bot.text("search_anyway_lost"))
        return
    key = f"anyway:teams:{incoming.conversation_id}:{data.get('a') or question}"
    if not await bot.runner.deliveries.first_time(key, ttl_s=PRESSED_TTL_S):
        await note(ctx, bot.text("search_anyway_used"))
        return
    await answer(bot, ctx, replace(incoming, text=question, files=[]), search_anyway=True)
