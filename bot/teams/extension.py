"""The search-based message extension: in the compose box's app search, type what and where
("infant care near 78702") and pick a facility card to insert. Answered in the invoke's
HTTP response, from the deterministic facility search (no LLM call)."""

import logging
import uuid

from microsoft_teams.api import (
    MessageExtensionQueryInvokeActivity,
    MessagingExtensionAttachmentLayout,
    MessagingExtensionInvokeResponse,
    MessagingExtensionResult,
    MessagingExtensionResultType,
)
from microsoft_teams.apps import ActivityContext

from bot.teams.cards import MAX_FACILITIES, extension_attachment, hits
from bot.teams.facility import search, usage

log = logging.getLogger("askdesk.teams")

COMMAND_ID = "searchFacilities"  # composeExtensions[0].commands[0].id in teams/manifest.json


def _query(activity: MessageExtensionQueryInvokeActivity) -> str:
    for parameter in activity.value.parameters or []:
        if parameter.name == "initialRun":
            return ""
        if parameter.value:
            return str(parameter.value).strip()
    return ""


def _message(text: str) -> MessagingExtensionInvokeResponse:
    return MessagingExtensionInvokeResponse(
        compose_extension=MessagingExtensionResult(type=MessagingExtensionResultType.MESSAGE, text=text))


def register(bot) -> None:
    @bot.app.on_message_ext_query
    async def on_query(ctx: ActivityContext[MessageExtensionQueryInvokeActivity]) -> MessagingExtensionInvokeResponse:
        query = _query(ctx.activity)
        if not query:
            return _message(bot.text("teams_extension_hint"))
        try:
            result = await search(bot, query)
        except Exception as exc:
            ref = uuid.uuid4().hex[:8]
            log.error("teams: extension search failed (reference %s): %s", ref, type(exc).__name__)
            return _message(bot.text("teams_facility_unavailable", ref=ref))
        if result.is_help:
            return _message(usage(result))
        found = hits(result)
        if not found:
            return _message(bot.text("teams_facility_none"))
        return MessagingExtensionInvokeResponse(compose_extension=MessagingExtensionResult(
            type=MessagingExtensionResultType.RESULT,
            attachment_layout=MessagingExtensionAttachmentLayout.LIST,
            attachments=[extension_attachment(hit) for hit in found[:MAX_FACILITIES]],
        ))
