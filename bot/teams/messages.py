"""Messages in: personal chats answer everything; channels and group chats answer an
@mention (in a channel: in its reply chain) and, in a channel reply chain the bot answered,
follow-ups without a new mention from the person who asked there (a group chat has no
reply chains, so there every question needs the mention). A channel or group chat whose answer mode
is `mentions` or `private` (ASKDESK_CHANNEL_ANSWER_MODES) answers mentions only. Bots (this one included) are ignored, and an activity id is answered
once however often Teams delivers it. A press of an askdesk card button (a message with a `value`
and no text) and a person's reply in an escalation thread go to bot/teams/escalation.py ("Search
the documents anyway" under a refusal: bot/teams/anyway.py).

The handler only decides and acknowledges; the turn runs in the background (bot.spawn),
so the HTTP response never waits on the agent. A note before any turn (an empty message) and a
registry command's card are said in the message's language when it is clear, else in the
activity's `locale`'s, else English (bot/note_language.py).
"""

import logging

from microsoft_teams.api import MessageActivity
from microsoft_teams.apps import ActivityContext

from agent.prompts import speaking
from bot.note_language import locale_language, note_language
from bot.teams.answer import answer, note
from bot.teams.commands import command_message, command_of
from bot.teams import anyway, confirm, escalation, learned_review
from bot.teams.connector import unreachable
from bot.teams.escalation_cards import SEARCH_ANYWAY, action_of
from bot.teams.incoming import TeamsMessage, parse
from bot.teams.private import _tenant
from bot.teams.report_card import report_message, wants_report

log = logging.getLogger("askdesk.teams")


def activity_key(incoming: TeamsMessage) -> str:
    """The claim on one activity (settled when its turn is over: bot/dedupe.py)."""
    return f"teams:activity:{incoming.conversation_id}:{incoming.activity_id}"


def register(bot) -> None:
    @bot.app.on_message
    async def on_message(ctx: ActivityContext[MessageActivity]) -> None:
        incoming = parse(ctx.activity)
        if incoming.from_bot:
            return
        if ctx.activity.service_url:  # where a question from another surface is posted (TeamsDesk)
            bot.connector = (ctx.activity.service_url, _tenant(ctx))
        if not await bot.dedupe.claim(activity_key(incoming)):
            log.info("teams: duplicate delivery of activity %s ignored", incoming.activity_id)
            return
        if (decided := confirm.pressed(bot, ctx, incoming)) is not None:  # Confirm / Cancel (bot/teams/confirm.py)
            bot.spawn(_settled(bot, incoming, decided))
            return
        if (reviewed := learned_review.pressed(bot, ctx, incoming)) is not None:  # a learned answer's review card
            bot.spawn(_settled(bot, incoming, reviewed))
            return
        button = action_of(ctx.activity.value)
        if button is not None:  # a press of an askdesk card button (no text, no mention)
            work = anyway.search_anyway(bot, ctx, incoming, button[1]) if button[0] == SEARCH_ANYWAY \
                else escalation.pressed(bot, ctx, incoming, *button)
            bot.spawn(_settled(bot, incoming, work))
            return
        if not incoming.personal and not incoming.mentioned and not incoming.text:
            return
        bot.spawn(handle(bot, ctx, incoming))


async def _addressed(bot, incoming: TeamsMessage) -> bool:
    """Personal chats and mentions always; otherwise only the asker's follow-up in a thread we answered."""
    if incoming.personal or incoming.mentioned:
        return True
    if incoming.scope != "channel" or not bot.runner.answers_follow_ups(incoming.place):
        return False
    try:
        return await bot.askers.asker(incoming.conversation_id) == incoming.user_id
    except Exception as exc:
        log.warning("teams: thread lookup failed (%s); ignoring an unmentioned message", type(exc).__name__)
        return False


async def send_report(bot, ctx) -> None:
    try:
        message = await report_message(bot.askdesk)
    except Exception as exc:
        log.warning("teams: report unavailable (%s)", type(exc).__name__)
        await note(ctx, bot.prompts.render("report_unavailable"))
        return
    try:
        await ctx.send(message)
    except Exception as exc:
        log.error("teams: report card not sent (%s)", type(exc).__name__)


async def handle(bot, ctx, incoming: TeamsMessage) -> None:
    """Answer (or not) one claimed activity, then settle its claim: done, whatever the outcome."""
    await _handle(bot, ctx, incoming)
    await bot.dedupe.settle(activity_key(incoming))


async def _settled(bot, incoming: TeamsMessage, work) -> None:
    try:
        await work
    finally:
        await bot.dedupe.settle(activity_key(incoming))


async def _handle(bot, ctx, incoming: TeamsMessage) -> None:
    if await escalation.relay_reply(bot, ctx, incoming):  # a person answering a passed-on question
        return
    if not await _addressed(bot, incoming):
        return
    if not incoming.text and not incoming.files:  # files alone are a question about them
        with speaking(locale_language(bot.prompts, ctx.activity.locale)):
            await note(ctx, bot.runner.prompts.render("empty_message"))
        return
    if wants_report(bot.settings, incoming.text, incoming.user_id):  # admins only (bot/teams/report_card.py)
        with speaking(locale_language(bot.prompts, ctx.activity.locale)):  # the admin's Teams language
            await send_report(bot, ctx)
        return
    found = command_of(bot, incoming.text)
    if found is not None:
        with speaking(note_language(bot.prompts, bot.askdesk.clear_language(found[1]), locale=ctx.activity.locale)):
            message = await command_message(bot, *found)
        try:
            await ctx.send(message)
        except Exception as exc:
            if unreachable(exc):
                log.warning("teams: %s card not delivered: the Bot Connector is unreachable (%s)", found[0].name,
                            type(exc).__name__)
            else:
                log.error("teams: %s card not sent (%s)", found[0].name, type(exc).__name__)
        return
    await answer(bot, ctx, incoming)
