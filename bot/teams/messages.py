"""Messages in: personal chats answer everything; channels and group chats answer an
@mention (in a channel: in its reply chain) and, in a channel reply chain the bot answered,
follow-ups without a new mention from the person who asked there (a group chat has no
reply chains, so there every question needs the mention). Bots (this one included) are ignored, and an activity id is answered
once however often Teams delivers it.

The handler only decides and acknowledges; the turn runs in the background (bot.spawn),
so the HTTP response never waits on the agent.
"""

import logging

from microsoft_teams.api import MessageActivity, MessageActivityInput
from microsoft_teams.apps import ActivityContext

from bot.teams.answer import answer
from bot.teams.facility import facility_message, facility_query
from bot.teams.incoming import Incoming, parse

log = logging.getLogger("askdesk.teams")


def register(bot) -> None:
    @bot.app.on_message
    async def on_message(ctx: ActivityContext[MessageActivity]) -> None:
        incoming = parse(ctx.activity)
        if incoming.from_bot:
            return
        if not bot.dedupe.first_time(f"activity:{incoming.conversation_id}:{incoming.activity_id}"):
            log.info("teams: duplicate delivery of activity %s ignored", incoming.activity_id)
            return
        if not incoming.personal and not incoming.mentioned and not incoming.text:
            return
        bot.spawn(handle(bot, ctx, incoming))


async def _addressed(bot, incoming: Incoming) -> bool:
    """Personal chats and mentions always; otherwise only the asker's follow-up in a thread we answered."""
    if incoming.personal or incoming.mentioned:
        return True
    if incoming.scope != "channel":
        return False
    try:
        return await bot.askers.asker(incoming.conversation_id) == incoming.user_id
    except Exception as exc:
        log.warning("teams: thread lookup failed (%s); ignoring an unmentioned message", type(exc).__name__)
        return False


async def note(ctx, text: str) -> None:
    try:
        await ctx.send(MessageActivityInput(text=text))
    except Exception as exc:
        log.warning("teams: note not sent (%s)", type(exc).__name__)


async def handle(bot, ctx, incoming: Incoming) -> None:
    if not await _addressed(bot, incoming):
        return
    settings = bot.settings
    if not incoming.text:
        await note(ctx, bot.text("empty_message"))
        return
    query = facility_query(incoming.text)
    if query is not None:
        message = await facility_message(bot, query)
        try:
            await ctx.send(message)
        except Exception as exc:
            log.error("teams: facility card not sent (%s)", type(exc).__name__)
        return
    if len(incoming.text) > settings.max_message_chars:
        await note(ctx, bot.text("too_long", limit=f"{settings.max_message_chars:,}", length=f"{len(incoming.text):,}"))
        return
    wait = bot.limiter.check(incoming.user_id)
    if wait:
        await note(ctx, bot.text("teams_rate_limited", seconds=int(wait)))
        return
    await answer(bot, ctx, incoming)
