"""The feedback loop's 👍/👎 (`message/submitAction`), stored through the turn runner like
Slack's buttons, with surface `teams`.

Teams sends only the rated message's id (`replyToId`), unique within its conversation: the
answer is found by conversation + message id among what this process remembers of its recent
answers (after a restart: rating only).
"""

import logging

from microsoft_teams.api import MessageSubmitActionInvokeActivity
from microsoft_teams.apps import ActivityContext

log = logging.getLogger("askdesk.teams")


def register(bot) -> None:
    @bot.app.on_message_submit_feedback
    async def on_feedback(ctx: ActivityContext[MessageSubmitActionInvokeActivity]) -> None:
        activity = ctx.activity
        conversation = activity.conversation.id
        try:
            await bot.runner.record_feedback(
                rating="up" if activity.value.action_value.reaction == "like" else "down",
                user_id=activity.from_.id, surface="teams", channel=conversation.split(";", 1)[0],
                thread=conversation, message_id=activity.reply_to_id)
        except Exception as exc:  # the user's click must not fail; the log says why it was lost
            log.error("teams: feedback not stored: %s", type(exc).__name__)
