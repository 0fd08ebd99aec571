"""One question, one answer: `Askdesk.answer` with the conversation id as the memory key
(a channel reply chain has its own id, so each thread has its own history), progress
shown through the reply renderer, the result rendered with citations, AI label and
feedback, and the asker remembered for follow-ups without a mention."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from httpx import HTTPStatusError
from microsoft_teams.apps import HttpStream

from agent.turn.service import AnswerResult, AskRequest
from bot.teams.app import AnswerRecord
from bot.teams.incoming import Incoming
from bot.teams.render import MAX_SOURCES, answer_activity
from bot.teams.reply import PostReply, Reply, StreamReply

if TYPE_CHECKING:
    from bot.teams.app import TeamsBot

log = logging.getLogger("askdesk.teams")


def make_reply(bot: "TeamsBot", ctx, incoming: Incoming) -> Reply:
    """Stream in personal chats (unless refused before or switched off); post elsewhere."""
    if incoming.personal and bot.settings.teams_streaming and incoming.conversation_id not in bot.no_streaming:
        return StreamReply(HttpStream(ctx.api, ctx.conversation_ref), ctx.send,
                           on_refused=lambda: bot.no_streaming.add(incoming.conversation_id))
    return PostReply(ctx.send)


def _why(exc: Exception) -> str:
    if isinstance(exc, HTTPStatusError):
        return f"HTTP {exc.response.status_code}"
    return type(exc).__name__


async def answer(bot: "TeamsBot", ctx, incoming: Incoming) -> None:
    reply = make_reply(bot, ctx, incoming)
    await reply.start(bot.text("teams_thinking"))
    answer_id = uuid.uuid4().hex[:12]
    request = AskRequest(text=incoming.text, surface="teams", thread_id=incoming.conversation_id,
                         user_id=incoming.user_id)
    try:
        result = await bot.askdesk.answer(request, progress=reply.progress, on_text=reply.append_text)
    except Exception as exc:  # answer() promises not to raise; a bug must still not leave the user hanging
        log.error("teams: answer failed (reference %s): %s", answer_id, type(exc).__name__)
        result = AnswerResult(answer=bot.text("internal_error", ref=answer_id), route="knowledge")

    notice = result.notice if result.notice and bot.notices_shown.first_time(incoming.conversation_id) else None
    rendered = answer_activity(result, notice=notice, sources_heading=bot.text("teams_sources"))
    try:
        message_id = await reply.finish(rendered.activity)
    except Exception as exc:
        log.error("teams: sending the answer failed (reference %s): %s", answer_id, _why(exc))
        return
    if rendered.feedback:
        bot.remember_answer(message_id, AnswerRecord(
            answer_id=answer_id, route=result.route, sources=[r.source for r in result.references[:MAX_SOURCES]],
            question=incoming.text if bot.settings.store_text else None))
    if not incoming.personal:
        try:
            await bot.askers.remember(incoming.conversation_id, incoming.user_id)
        except Exception as exc:
            log.warning("teams: thread asker not saved (%s)", type(exc).__name__)
