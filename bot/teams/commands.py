"""Registry commands typed to the bot (`NAME what and where`, e.g. `office parking in
Austin`) and the compose box's search (the message extension): the same parser and search as
Slack's slash commands, through the turn runner and the service."""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING

from microsoft_teams.api import MessageActivityInput

from agent.capabilities.base import Command, CommandResult
from bot.teams.cards import record_list_card
from bot.teams.escape import teams_text
from bot.turn import new_id

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")


def command_of(bot: "TeamsBot", text: str) -> tuple[Command, str] | None:
    """(command, its query) when `text` is "NAME …", "/NAME …" or "RECORDS: …" ("offices: parking in
    Austin") for a declared command."""
    for command in bot.askdesk.commands():
        names = "|".join(re.escape(n) for n in {command.name, command.records})
        match = re.match(rf"^\s*/?(?:{names})\b[\s:,-]*(?P<query>.*)$", text, re.IGNORECASE | re.DOTALL)
        if match:
            return command, match.group("query").strip()
    return None


def usage(command: Command) -> str:
    """The command's help, worded for Teams (typed without a slash)."""
    return command.help(prefix="")


async def run(bot: "TeamsBot", command: Command, query: str) -> CommandResult:
    return await bot.runner.command(command.name, query)


def unavailable(bot: "TeamsBot", command: Command, where: str) -> str:
    ref = new_id()
    log.error("teams: %s %s failed (reference %s)", where, command.name, ref)
    return bot.runner.prompts.render("command_error", record=command.record, ref=ref)


async def command_message(bot: "TeamsBot", command: Command, query: str) -> MessageActivityInput:
    """The reply to `NAME <query>`: an Adaptive Card list, the usage, or an apology."""
    try:
        result = await run(bot, command, query)
    except Exception:
        return MessageActivityInput(text=teams_text(unavailable(bot, command, "search")))
    if result.is_help:
        help_text = teams_text(result.reply.replace("/" + command.name, command.name))
        return MessageActivityInput(text=f"```\n{help_text}\n```")
    return MessageActivityInput().add_card(record_list_card(result, command, bot.text, bot.runner.prompts))
