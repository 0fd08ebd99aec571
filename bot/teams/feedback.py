"""The feedback loop's 👍/👎 (`message/submitAction`), stored through the turn runner like
Slack's buttons, with surface `teams`.

Teams sends only the rated message's id (`replyToId`), unique within its conversation: the
answer is found by conversation + message id among what this process remembers of its recent
answers (after a restart: rating only). What the person typed in the feedback form
(`feedback`: JSON with `feedbackText`) is stored as the record's comment, unless the answer was
private (or is no longer known: it may have been). With an escalation conversation set, the
asker's 👎 on a public answer is answered with thanks and "Ask a person" (bot/teams/escalation.py);
anyone else's only gets Teams' own acknowledgement. Teams' feedback carries no data of the bot's,
so the thanks is said in the language of the asker's latest clear question in the conversation's
memory, else the presser's Teams locale, else English (bot/note_language.py).
"""

import json
import logging

from microsoft_teams.api import MessageSubmitActionInvokeActivity
from microsoft_teams.apps import ActivityContext

from bot.note_language import locale_language, spoken
from bot.teams.escalation import thanks_message
from bot.teams.settings import SURFACE

log = logging.getLogger("askdesk.teams")


def register(bot) -> None:
    @bot.app.on_message_submit_feedback
    async def on_feedback(ctx: ActivityContext[MessageSubmitActionInvokeActivity]) -> None:
        activity = ctx.activity
        conversation = activity.conversation.id
        record = None
        try:
            record = await bot.runner.record_feedback(
                rating="up" if activity.value.action_value.reaction == "like" else "down",
                user_id=activity.from_.id, surface="teams", channel=conversation.split(";", 1)[0],
                thread=conversation, message_id=activity.reply_to_id,
                comment=feedback_text(activity.value.action_value.feedback))
        except Exception as exc:  # the user's click must not fail; the log says why it was lost
            log.error("teams: feedback not stored: %s", type(exc).__name__)
        if (activity.value.action_value.reaction != "like"
                and bot.runner.offers_escalation(SURFACE, record, activity.from_.id)):
            bot.spawn(_thanks(bot, ctx, conversation, activity.reply_to_id, activity.locale))


async def rated_language(bot, conversation: str, locale: str | None) -> str | None:
    """The language the rated answer was most likely said in (None: English); never raises."""
    try:
        messages = (await bot.askdesk.state.load("teams", conversation)).messages
    except Exception as exc:
        log.info("teams: the conversation's language could not be read (%s)", type(exc).__name__)
        messages = []
    asked = (bot.askdesk.clear_language(m.content) for m in reversed(messages) if m.role == "user" and m.content)
    return spoken(bot.prompts, next((lang for lang in asked if lang), None)) or locale_language(bot.prompts, locale)


async def _thanks(bot, ctx: ActivityContext, conversation: str, message_id: str | None, locale: str | None) -> None:
    """After a 👎: thanks, with "Ask a person" (bot/teams/escalation.py), after the invoke's
    response; never raises."""
    language = await rated_language(bot, conversation, locale)
    try:
        await ctx.send(thanks_message(bot, message_id=message_id, language=language))
    except Exception as exc:
        log.info("teams: feedback thanks not sent (%s)", type(exc).__name__)


def feedback_text(raw: str | None, limit: int = 2000) -> str | None:
    """The form's text, or None (an empty form, or not the JSON Teams sends)."""
    try:
        data = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return None
    text = data.get("feedbackText") if isinstance(data, dict) else None
    return text.strip()[:limit] or None if isinstance(text, str) else None
