"""Revisit notes on Teams (bot/revisit.py): one message in the answer's conversation (a channel
answer's reply chain: its conversation id names the thread), posted proactively through the Bot
Connector last seen, saying that the cited document changed, with the new answer and its sources."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from microsoft_teams.api import MessageActivityInput

from agent.answers import AnswerResult
from agent.revisit import Revisit
from bot.teams.escape import teams_text
from bot.teams.escalation import describe
from bot.teams.render import sources_line

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")


class TeamsRevisitDesk:
    def __init__(self, bot: "TeamsBot") -> None:
        self.bot = bot

    async def note(self, revisit: Revisit, heading: str, answer: AnswerResult | None) -> bool:
        text = f"_ℹ️ {teams_text(heading)}_"
        if answer is not None:
            text += f"\n\n{teams_text(answer.answer.strip())}"
            if answer.references:
                text += "\n\n" + sources_line(answer.references, self.bot.prompts.text("sources_heading"))
        service_url, _ = self.bot.connector
        api = self.bot.app.api.from_service_url(service_url) if service_url else self.bot.app.api
        try:
            await api.conversations.create_activity(revisit.answer.thread_id, MessageActivityInput(text=text))
        except Exception as exc:
            log.warning("teams: the revisit note for answer %s was not posted (%s)", revisit.answer.answer_id,
                        describe(exc))
            return False
        return True
