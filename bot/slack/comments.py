"""Feedback with words: a 👎 opens a short comment box (a Slack modal), and what the person
writes is stored with their feedback record.

The modal carries the rated answer's id in its `private_metadata`; the 👎 itself is stored when
it is clicked, so closing the box loses nothing, and a comment is added to that record.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.reply import describe

log = logging.getLogger("askdesk.slack")

COMMENT_VIEW = "feedback_comment"
COMMENT_BLOCK = "comment"
COMMENT_INPUT = "comment_text"
COMMENT_CHARS = 2000


def comment_view(answer_id: str | None, prompts: Any) -> dict[str, Any]:
    return {
        "type": "modal", "callback_id": COMMENT_VIEW,
        "private_metadata": json.dumps({"a": answer_id}),
        "title": {"type": "plain_text", "text": prompts.text("feedback_comment_title")[:24]},
        "submit": {"type": "plain_text", "text": prompts.text("feedback_comment_submit")[:24]},
        "blocks": [{
            "type": "input", "block_id": COMMENT_BLOCK, "optional": True,
            "label": {"type": "plain_text", "text": prompts.text("feedback_comment_label")[:2000]},
            "element": {"type": "plain_text_input", "action_id": COMMENT_INPUT, "multiline": True,
                        "max_length": COMMENT_CHARS},
        }],
    }


async def open_comment_box(client: AsyncWebClient, trigger_id: str | None, answer_id: str | None,
                           prompts: Any) -> None:
    """Best effort: a trigger expires after 3 s, and the 👎 is stored already."""
    if not trigger_id:
        return
    try:
        await client.views_open(trigger_id=trigger_id, view=comment_view(answer_id, prompts))
    except Exception as exc:
        log.info("slack: the comment box did not open (%s)", describe(exc))


def register(app: AsyncApp) -> None:
    @app.view(COMMENT_VIEW)
    async def submitted(ack: AsyncAck, body: dict, view: dict, runner: Any) -> None:
        await ack()
        try:
            answer_id = json.loads(view.get("private_metadata") or "{}").get("a")
        except (json.JSONDecodeError, AttributeError):
            answer_id = None
        values = ((view.get("state") or {}).get("values") or {}).get(COMMENT_BLOCK) or {}
        comment = ((values.get(COMMENT_INPUT) or {}).get("value") or "").strip()
        user = (body.get("user") or {}).get("id") or "unknown"
        if comment and answer_id:
            await runner.comment_feedback(answer_id=str(answer_id), user_id=user, comment=comment[:COMMENT_CHARS])
