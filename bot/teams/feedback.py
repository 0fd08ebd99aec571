"""The feedback loop's 👍/👎 (`message/submitAction`), stored in the same feedback store as
Slack's buttons with surface `teams`: who, where, the rated answer's route and sources.

Teams sends only the rated message's id (`replyToId`); the route and sources come from
what this process remembers about its recent answers (after a restart: rating only). The
free-text comment is not stored (the store keeps no message content by default).
"""

import logging

from microsoft_teams.api import MessageSubmitActionInvokeActivity
from microsoft_teams.apps import ActivityContext

from agent.state.feedback import Feedback

log = logging.getLogger("askdesk.teams")


def register(bot) -> None:
    @bot.app.on_message_submit_feedback
    async def on_feedback(ctx: ActivityContext[MessageSubmitActionInvokeActivity]) -> None:
        activity = ctx.activity
        message_id = activity.reply_to_id
        record = bot.answers.get(message_id or "")
        conversation = activity.conversation.id
        try:
            await bot.feedback.add(Feedback(
                rating="up" if activity.value.action_value.reaction == "like" else "down",
                user_id=activity.from_.id, surface="teams",
                channel=conversation.split(";", 1)[0], thread=conversation,
                answer_id=record.answer_id if record else message_id,
                route=record.route if record else None,
                sources=list(record.sources) if record else [],
                question=record.question if record and bot.settings.store_text else None,
            ))
        except Exception as exc:  # the user's click must not fail; the log says why it was lost
            log.error("teams: feedback not stored: %s", type(exc).__name__)
