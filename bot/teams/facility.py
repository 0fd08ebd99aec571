"""`facility <what and where>` typed to the bot, and the message extension's search: the
same deterministic parser and registry search as `/facility` (no LLM call on either path)."""

from __future__ import annotations

import logging
import re
import uuid
from typing import TYPE_CHECKING

from microsoft_teams.api import MessageActivityInput

from agent.facilities.command import FacilityCommandResult, run_facility_command
from bot.teams.cards import facility_list_card

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")

_COMMAND = re.compile(r"^\s*/?facilit(?:y|ies)\b[\s:,-]*(?P<query>.*)$", re.IGNORECASE | re.DOTALL)


def facility_query(text: str) -> str | None:
    """The query of a `facility …` message, or None when the message is not one."""
    match = _COMMAND.match(text)
    return match.group("query").strip() if match else None


async def search(bot: "TeamsBot", query: str) -> FacilityCommandResult:
    # with a router model, words the parser could not place get one extraction call
    return await run_facility_command(bot.runtime or bot.askdesk.runtime, query,
                                      model=bot.askdesk.models.router, prompts=bot.askdesk.prompts)


def usage(result: FacilityCommandResult) -> str:
    """The command's help, worded for Teams (no slash)."""
    return result.reply.replace("/facility", "facility")


async def facility_message(bot: "TeamsBot", query: str) -> MessageActivityInput:
    """The reply to `facility <query>`: an Adaptive Card list, the usage, or an apology."""
    try:
        result = await search(bot, query)
    except Exception as exc:
        ref = uuid.uuid4().hex[:8]
        log.error("teams: facility search failed (reference %s): %s", ref, type(exc).__name__)
        return MessageActivityInput(text=bot.text("teams_facility_unavailable", ref=ref))
    if result.is_help:
        return MessageActivityInput(text=f"```\n{usage(result)}\n```")
    return MessageActivityInput().add_card(facility_list_card(result, bot.text))
