"""A learned answer's review on Slack: the owner's DM before its review date (Confirm, Edit,
Retire), and what each button does.

Edit opens a modal with the answer's text: the owner is an expert, usually not an admin, and the
console admits admins only, so the edit happens where the reminder is. Slack's text input holds
3,000 characters; a longer answer is edited by an admin in the console (its Edit button is left
out of the DM). Every press, and the modal's submission, is checked against the answer's owner as
its file records it (bot/permissions.py), never against anything the button carries. The DM and
its notes are said in the language of the answer's question (the expert answered it in that one).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Awaitable, Callable

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from agent.learned import Notifier, Reminder
from agent.prompts import PromptSet, speaking
from bot.note_language import note_language
from bot.permissions import press_refused
from bot.slack.blocks import action_value
from bot.slack.escape import safe_mrkdwn
from bot.slack.reply import describe, send_note

log = logging.getLogger("askdesk.slack")

CONFIRM, EDIT, RETIRE = "learned_confirm", "learned_edit", "learned_retire"
EDIT_VIEW, EDIT_BLOCK, EDIT_INPUT = "learned_edit_view", "learned_edit_text", "answer"
INPUT_MAX = 3000  # Slack's limit on a plain_text_input


def reminder_blocks(reminder: Reminder, prompts: PromptSet) -> tuple[str, list[dict[str, Any]]]:
    """The DM's text and blocks: what is asked, the answer as it stands, the three buttons."""
    with speaking(note_language(prompts, reminder.language)):
        return _reminder_blocks(reminder, prompts)


def _reminder_blocks(reminder: Reminder, prompts: PromptSet) -> tuple[str, list[dict[str, Any]]]:
    answer = reminder.answer
    text = prompts.text("learned_review_expired" if reminder.expired else "learned_review_due",
                        question=answer.question, date=f"{reminder.review_by:%Y-%m-%d}", cited=reminder.cited)
    value = json.dumps({"n": answer.name}, separators=(",", ":"))
    buttons = [("✅ ", CONFIRM, "learned_confirm_button"), ("✏️ ", EDIT, "learned_edit_button"),
               ("🗑️ ", RETIRE, "learned_retire_button")]
    if len(answer.answer) > INPUT_MAX:
        buttons = [b for b in buttons if b[1] != EDIT]
    quoted = "\n".join("> " + line for line in safe_mrkdwn(answer.answer)[:2500].splitlines())
    blocks: list[dict[str, Any]] = [
        {"type": "section", "text": {"type": "mrkdwn", "text": safe_mrkdwn(text)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": quoted or ">"}},
        {"type": "actions", "block_id": "learned_review", "elements": [
            {"type": "button", "action_id": action, "value": value,
             "text": {"type": "plain_text", "text": icon + prompts.text(label), "emoji": True},
             **({"style": "danger"} if action == RETIRE else {})}
            for icon, action, label in buttons]},
    ]
    return text, blocks


def notifier(client: AsyncWebClient, prompts: PromptSet) -> Notifier:
    """Send a reminder to a Slack owner in their DM with askdesk: `chat.postMessage` to their user
    id posts in the app's Messages tab with them, with the `chat:write` scope askdesk has already
    (`conversations.open` would need `im:write`, and every workspace to reinstall the app)."""

    async def notify(reminder: Reminder) -> bool:
        owner = reminder.answer.owner
        if owner is None:
            return False
        try:
            text, blocks = reminder_blocks(reminder, prompts)
            await client.chat_postMessage(channel=owner.id, text=text, blocks=blocks)
        except Exception as exc:
            log.warning("slack: the review message for %s was not sent (%s)", reminder.answer.name, describe(exc))
            return False
        return True

    return notify


def _presser(body: dict) -> str:
    return (body.get("user") or {}).get("id") or ""


async def pressed(body: dict, action: dict, client: AsyncWebClient, runner: Any) -> None:
    """Confirm, Edit or Retire under a review DM, by its owner or an admin."""
    name = str(action_value(action).get("n") or "")
    user = _presser(body)
    container = body.get("container") or {}
    channel = container.get("channel_id") or (body.get("channel") or {}).get("id")
    message_ts = container.get("message_ts")
    answer = runner.askdesk.learned_answers.get(name) if name else None

    async def done(text: str) -> None:
        """The DM's buttons give way to what was done (no second press)."""
        try:
            await client.chat_update(channel=channel, ts=message_ts, text=text,
                                     blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": safe_mrkdwn(text)}}])
        except Exception as exc:
            log.warning("slack: the review message was not updated (%s)", describe(exc))
            await send_note(client, channel=channel, thread_ts=None, user=user, is_dm=True, text=text)

    if answer is None:
        if channel:
            await done(runner.prompts.text("learned_gone"))
        return
    with speaking(note_language(runner.prompts, runner.askdesk.clear_language(answer.question))):
        await _review(body, action, client, runner, answer, done, channel=channel, message_ts=message_ts)


async def _review(body: dict, action: dict, client: AsyncWebClient, runner: Any, answer: Any,
                  done: Callable[[str], Awaitable[None]], *, channel: str | None, message_ts: str | None) -> None:
    askdesk, prompts = runner.askdesk, runner.prompts
    answers, name, user = askdesk.learned_answers, answer.name, _presser(body)
    refused = press_refused(askdesk.settings, prompts, "review_answer", presser=user,
                            owner=answer.owner.id if answer.owner is not None else None)
    if refused is not None:
        if channel:
            await send_note(client, channel=channel, thread_ts=None, user=user, is_dm=False, text=refused)
        return
    match action.get("action_id"):
        case "learned_confirm":
            confirmed = await answers.confirm(name)
            await done(prompts.text("learned_confirmed", date=f"{answers.review_by(confirmed):%Y-%m-%d}"))
        case "learned_retire":
            await askdesk.remove_learned(name)
            await done(prompts.text("learned_retired"))
        case "learned_edit":
            await _open_editor(client, body.get("trigger_id"), answer.name, answer.answer, channel, message_ts, prompts)


async def _open_editor(client: AsyncWebClient, trigger_id: str | None, name: str, text: str, channel: str | None,
                       message_ts: str | None, prompts: PromptSet) -> None:
    if not trigger_id:
        return
    view = {
        "type": "modal", "callback_id": EDIT_VIEW,
        "private_metadata": json.dumps({"n": name, "c": channel, "m": message_ts}),
        "title": {"type": "plain_text", "text": prompts.text("learned_edit_title")[:24]},
        "submit": {"type": "plain_text", "text": prompts.text("learned_edit_submit")[:24]},
        "blocks": [{
            "type": "input", "block_id": EDIT_BLOCK,
            "label": {"type": "plain_text", "text": prompts.text("learned_edit_label")[:2000]},
            "element": {"type": "plain_text_input", "action_id": EDIT_INPUT, "multiline": True,
                        "initial_value": text[:INPUT_MAX], "max_length": INPUT_MAX},
        }],
    }
    try:
        await client.views_open(trigger_id=trigger_id, view=view)
    except Exception as exc:
        log.info("slack: the edit box did not open (%s)", describe(exc))


async def edited(body: dict, view: dict, client: AsyncWebClient, runner: Any) -> None:
    """The edit box's text, saved by the answer's owner or an admin (checked again: a view's
    submission names its submitter)."""
    askdesk, prompts = runner.askdesk, runner.prompts
    answers = askdesk.learned_answers
    try:
        meta = json.loads(view.get("private_metadata") or "{}")
    except json.JSONDecodeError:
        return
    name, channel, message_ts = str(meta.get("n") or ""), meta.get("c"), meta.get("m")
    values = ((view.get("state") or {}).get("values") or {}).get(EDIT_BLOCK) or {}
    text = ((values.get(EDIT_INPUT) or {}).get("value") or "").strip()
    answer = answers.get(name) if name else None
    user = _presser(body)
    if answer is None or not text:
        return
    if press_refused(askdesk.settings, prompts, "review_answer", presser=user,
                     owner=answer.owner.id if answer.owner is not None else None) is not None:
        return
    saved = await answers.edit(name, text)
    if saved is None or not channel:
        return
    with speaking(note_language(prompts, askdesk.clear_language(answer.question))):
        note = prompts.text("learned_edited", date=f"{answers.review_by(saved):%Y-%m-%d}")
    try:
        await client.chat_update(channel=channel, ts=message_ts, text=note,
                                 blocks=[{"type": "section", "text": {"type": "mrkdwn", "text": safe_mrkdwn(note)}}])
    except Exception as exc:
        log.warning("slack: the review message was not updated (%s)", describe(exc))


def register(app: AsyncApp) -> None:
    for action_id in (CONFIRM, EDIT, RETIRE):
        @app.action(action_id)
        async def review(ack: AsyncAck, body: dict, action: dict, client: AsyncWebClient, runner: Any) -> None:
            await ack()
            await pressed(body, action, client, runner)

    @app.view(EDIT_VIEW)
    async def submitted(ack: AsyncAck, body: dict, view: dict, client: AsyncWebClient, runner: Any) -> None:
        await ack()
        await edited(body, view, client, runner)
