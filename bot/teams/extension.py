"""The search-based message extension: in the compose box's app search, type what and where
("infant care near 78702") and pick a record's card to insert. The search's notes (a misspelt
place's "did you mean …?" or its correction) come first, as their own row, as on the chat
card. One extension command per registry command (its id is the command's name: `askdesk
teams package` writes them into the manifest). Answered in the invoke's HTTP response,
through the turn runner and the service; its notes in the query's language when it is clear,
else the activity's `locale`'s, else English (bot/note_language.py)."""

import logging

from microsoft_teams.api import (
    MessageExtensionQueryInvokeActivity,
    MessagingExtensionAttachmentLayout,
    MessagingExtensionInvokeResponse,
    MessagingExtensionResult,
    MessagingExtensionResultType,
)
from microsoft_teams.apps import ActivityContext

from agent.prompts import speaking
from bot.note_language import note_language
from bot.teams.cards import MAX_RECORDS, extension_attachment, notes_attachment
from bot.teams.commands import run, unavailable, usage
from bot.teams.escape import teams_text

log = logging.getLogger("askdesk.teams")


def _query(activity: MessageExtensionQueryInvokeActivity) -> str:
    for parameter in activity.value.parameters or []:
        if parameter.name == "initialRun":
            return ""
        if parameter.value:
            return str(parameter.value).strip()
    return ""


def _message(text: str) -> MessagingExtensionInvokeResponse:
    return MessagingExtensionInvokeResponse(compose_extension=MessagingExtensionResult(
        type=MessagingExtensionResultType.MESSAGE, text=teams_text(text)))


def register(bot) -> None:
    @bot.app.on_message_ext_query
    async def on_query(ctx: ActivityContext[MessageExtensionQueryInvokeActivity]) -> MessagingExtensionInvokeResponse:
        typed = bot.askdesk.clear_language(_query(ctx.activity))
        with speaking(note_language(bot.prompts, typed, locale=ctx.activity.locale)):
            return await _answer(bot, ctx)


async def _answer(bot, ctx: ActivityContext[MessageExtensionQueryInvokeActivity]) -> MessagingExtensionInvokeResponse:
    """The search's cards, or a one-line message (no command, no query yet, a failure, nothing found)."""
    commands = [c for c in bot.askdesk.commands() if c.extension]
    command_id = (ctx.activity.value.command_id or "").lower()
    command = next((c for c in commands if c.name == command_id), commands[0] if commands else None)
    if command is None:
        return _message(bot.runner.prompts.render("empty_message"))
    query = _query(ctx.activity)
    if not query:
        return _message(bot.text("teams_extension_hint", example=command.example))
    try:
        result = await run(bot, command, query)
    except Exception:
        return _message(unavailable(bot, command, "extension"))
    if result.is_help:
        return _message(usage(command))
    if not result.records:
        notes = "; ".join(result.notes)  # "did you mean …?" and the like, as the chat card shows
        none = bot.runner.prompts.render("records_none", records=command.records)
        return _message(f"{none} {notes}".strip())
    attachments = [extension_attachment(view) for view in result.records[:MAX_RECORDS]]
    if result.notes:  # the chat card's note line ("did you mean …?"), as the first row
        attachments.insert(0, notes_attachment(result, command, bot.text, bot.runner.prompts))
    return MessagingExtensionInvokeResponse(compose_extension=MessagingExtensionResult(
        type=MessagingExtensionResultType.RESULT,
        attachment_layout=MessagingExtensionAttachmentLayout.LIST,
        attachments=attachments,
    ))
