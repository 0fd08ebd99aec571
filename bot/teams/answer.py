"""One question, one answer through the turn runner (bot/turn.py): the conversation id is the
memory key (a channel reply chain has its own id, so each thread has its own history),
progress and the streamed text go to the reply renderer (bot/teams/reply.py), the result is
rendered with citations, AI label and feedback, and the asker is remembered for follow-ups
without a mention. A private answer (the conversation's answer mode, or a question starting with
ASKDESK_PRIVATE_WORD, as the shared runner decides: `TurnRunner.privacy`) goes to the asker alone
(bot/teams/private.py), is stored nowhere and remembers no asker; the word in a personal chat
keeps the answer there, stored nowhere too. The buttons an answer offers ("Ask a person",
"Search the documents anyway") are the runner's decision too (`Delivery`). The message's files
are fetched once the asker sees progress.

An answer that cannot reach Teams because the Bot Connector is unreachable (bot/teams/connector.py)
is one WARNING line with its reference, not the turn runner's delivery error and apology (which
could not be delivered either)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING

from microsoft_teams.api import MessageActivityInput

from bot.files import fetch_files
from bot.teams.people import email_loader
from bot.teams.connector import unreachable
from bot.teams.confirm_card import confirm_card
from bot.teams.escalation_cards import anyway_button, escalate_button
from bot.teams.escape import teams_text
from bot.teams.incoming import TeamsMessage
from bot.teams.private import PrivateSend
from bot.teams.render import answer_activity
from bot.teams.settings import SURFACE
from bot.teams.stream_refusals import QuietStream
from bot.teams.reply import PostReply, Renderer, StreamReply
from bot.turn import Delivery, Incoming

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")


def make_reply(bot: "TeamsBot", ctx, incoming: TeamsMessage) -> Renderer:
    """Stream in personal chats (unless refused before or switched off); post elsewhere."""
    if incoming.personal and bot.teams_settings.streaming and incoming.conversation_id not in bot.no_streaming:
        return StreamReply(QuietStream(ctx.api, ctx.conversation_ref), ctx.send,
                           on_refused=lambda: bot.no_streaming.add(incoming.conversation_id))
    return PostReply(ctx.send)


async def note(ctx, text: str) -> None:
    """A short note in the conversation; never raises."""
    try:
        await ctx.send(MessageActivityInput(text=teams_text(text)))
    except Exception as exc:
        log.warning("teams: note not sent (%s)", type(exc).__name__)


class TeamsReply:
    """The turn runner's `Reply` on Teams: the stream or post renderer, and notes."""

    def __init__(self, bot: "TeamsBot", ctx, incoming: TeamsMessage, *, private: bool = False) -> None:
        self.bot, self.ctx = bot, ctx
        self.private = PrivateSend(bot, ctx, incoming) if private else None
        self.renderer = PostReply(self.private) if self.private else make_reply(bot, ctx, incoming)
        self.streams = isinstance(self.renderer, StreamReply)  # channels and group chats get one message
        self._started = False
        # the question, carried by "Ask a person" and "Search the documents anyway" when the turn
        # runner offers them (Delivery): Teams gives a bot no way to read a conversation back
        self.question = incoming.text
        self.undelivered = False  # the connector was unreachable: the answer never reached Teams

    async def progress(self, step: str) -> None:
        if not self._started:
            self._started = True
            await self.renderer.start(step)
        else:
            await self.renderer.progress(step)

    async def text(self, delta: str) -> None:
        await self.renderer.append_text(delta)

    async def finish(self, delivery: Delivery) -> str | None:
        action = delivery.result.action  # calls waiting for the asker: rated once they ran
        rendered = answer_activity(delivery.result, notice=delivery.notice, feedback=delivery.feedback and not action,
                                   sources_heading=self.bot.text("teams_sources"))
        if action is not None:  # Confirm / Cancel in the answer's own message (bot/teams/confirm_card.py)
            rendered.activity.add_attachments(confirm_card(self.bot.prompts, action, private=self.private is not None))
        if delivery.ask_a_person:  # in the answer's own message: no extra call
            rendered.activity.add_attachments(escalate_button(
                self.bot.prompts, answer_id=delivery.answer_id, question=self.question,
                attempt=delivery.result.answer, language=delivery.result.language))
        if delivery.search_anyway:
            rendered.activity.add_attachments(anyway_button(self.bot.prompts, answer_id=delivery.answer_id,
                                                            question=self.question,
                                                            language=delivery.result.language))
        try:
            sent = await self.renderer.finish(rendered.activity)
            for more in rendered.more:  # an answer card too large for one message goes on in the next
                await (self.private or self.ctx.send)(more)
            return sent
        except Exception as exc:
            if not unreachable(exc):
                raise  # the turn runner logs it and apologises
            self.undelivered = True
            log.warning("teams: answer %s not delivered: the Bot Connector is unreachable (%s)",
                        delivery.answer_id, type(exc).__name__)
            return None

    async def note(self, text: str) -> None:
        if self.private is None:
            return await note(self.ctx, text)
        try:
            await self.private(MessageActivityInput(text=teams_text(text)))
        except Exception as exc:
            log.warning("teams: private note not sent (%s)", type(exc).__name__)

    async def apologise(self, text: str) -> None:
        await (self.private or self.ctx.send)(MessageActivityInput(text=teams_text(text)))


async def answer(bot: "TeamsBot", ctx, incoming: TeamsMessage, *, search_anyway: bool = False) -> None:
    """`search_anyway`: the asker pressed "Search the documents anyway" under a refusal of it."""
    where = None if incoming.personal else incoming.place
    privacy = bot.runner.privacy(incoming.text, channel=where)  # the rules every surface shares
    # asked privately in a personal chat: answered there as usual, but kept nowhere and never passed on
    reply = TeamsReply(bot, ctx, replace(incoming, text=privacy.text), private=privacy.private)
    files = incoming.files
    delivery = await bot.runner.run(Incoming(
        surface=SURFACE, text=privacy.text, thread_id=incoming.conversation_id, user_id=incoming.user_id,
        private=not privacy.stored,
        load_attachments=(lambda: fetch_files(files, bot.askdesk, SURFACE)) if files else None,
        search_anyway=search_anyway, channel=where,
        load_email=email_loader(ctx, incoming.conversation_id, incoming.user_id),
    ), reply)
    if delivery is not None and not reply.undelivered and not incoming.personal and not privacy.private:
        try:
            await bot.askers.remember_asker(incoming.conversation_id, incoming.user_id)
        except Exception as exc:
            log.warning("teams: thread asker not saved (%s)", type(exc).__name__)
