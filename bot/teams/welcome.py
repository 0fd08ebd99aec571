"""Welcome when the app is installed (or the bot joins a conversation): what askdesk does,
and in personal chats a few suggested prompts the user can tap (suggested actions send
them as the user's own message). It is said in the language of the activity's `locale`
("es-ES": Spanish) when askdesk speaks it, else English (bot/note_language.py)."""

import logging

from microsoft_teams.api import (
    CardAction,
    CardActionType,
    ConversationUpdateActivity,
    InstalledActivity,
    MessageActivityInput,
    SuggestedActions,
)
from microsoft_teams.apps import ActivityContext

from agent.prompts import speaking
from bot.note_language import locale_language
from bot.teams.escape import teams_text

log = logging.getLogger("askdesk.teams")

MAX_SUGGESTIONS = 3
TITLE_CHARS = 50


def _title(text: str) -> str:
    return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"


def welcome_message(bot, scope: str, user_id: str | None, prompts: list[str]) -> MessageActivityInput:
    # settings, domain file or the KB's titles, in the language being spoken
    capabilities = bot.askdesk.identity.get(None).capabilities_in()
    # capabilities may come from the documents' titles: rendered like any untrusted text
    message = MessageActivityInput(text=teams_text(bot.text("teams_welcome", capabilities=capabilities,
                                                            commands=bot.askdesk.commands(), scope=scope)))
    personal = scope == "personal"
    prompts = prompts[:MAX_SUGGESTIONS]
    if personal and prompts:
        actions = [CardAction(type=CardActionType.IM_BACK, value=p,  # the value is sent back as the user's text
                              title=_title(teams_text(p))) for p in prompts]
        message.with_suggested_actions(SuggestedActions(to=[user_id] if user_id else [], actions=actions))
    return message


async def teams_prompts(bot) -> list[str]:
    """The setting's prompts, else the deployment's, with registry examples typed as commands."""
    if bot.teams_settings.suggested_prompts:
        return list(bot.teams_settings.suggested_prompts)
    identity = bot.askdesk.identity.get(None)
    return [*identity.prompts, *(f"{c.name} {c.example}" for c in bot.askdesk.commands() if c.example)]


async def send_welcome(bot, ctx) -> None:
    conversation = ctx.activity.conversation
    if not await bot.dedupe.first_time(f"teams:welcome:{conversation.id}"):
        return  # installationUpdate and conversationUpdate both announce one install
    kind = conversation.conversation_type
    scope = "channel" if kind == "channel" else "groupChat" if kind == "groupChat" or conversation.is_group else "personal"
    try:
        await bot.askdesk.identity.load(None)
        prompts = await teams_prompts(bot)
        with speaking(locale_language(bot.prompts, ctx.activity.locale)):
            message = welcome_message(bot, scope, ctx.activity.from_.id if scope == "personal" else None, prompts)
        await ctx.send(message)
    except Exception as exc:
        log.warning("teams: welcome not sent (%s)", type(exc).__name__)


def register(bot) -> None:
    @bot.app.on_install_add
    async def on_install(ctx: ActivityContext[InstalledActivity]) -> None:
        await send_welcome(bot, ctx)

    @bot.app.on_conversation_update
    async def on_conversation_update(ctx: ActivityContext[ConversationUpdateActivity]) -> None:
        added = ctx.activity.members_added or []
        if any(member.id == ctx.activity.recipient.id for member in added):
            await send_welcome(bot, ctx)
