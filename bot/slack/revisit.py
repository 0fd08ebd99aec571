"""Revisit notes on Slack (bot/revisit.py): one message in the answer's thread (`chat.postMessage`
with its `thread_ts`) saying that the cited document changed, with the new answer and its
sources below when there is one."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from agent.answers import AnswerResult
from agent.revisit import Revisit
from bot.slack.blocks import answer_parts, markdown_block, plain, sources_block
from bot.slack.escape import safe_markdown, safe_mrkdwn
from bot.slack.reply import describe

if TYPE_CHECKING:
    from agent.prompts import PromptSet

log = logging.getLogger("askdesk.slack")


class SlackRevisitDesk:
    def __init__(self, client: AsyncWebClient, prompts: "PromptSet") -> None:
        self.client, self.prompts = client, prompts

    async def note(self, revisit: Revisit, heading: str, answer: AnswerResult | None) -> bool:
        channel, _, thread_ts = revisit.answer.thread_id.partition(":")
        if not channel or not thread_ts or ":" in thread_ts:  # not a thread of a channel or DM (a private answer)
            return False
        blocks = [{"type": "section", "text": {"type": "mrkdwn", "text": plain(f":information_source: "
                                                                             f"{safe_mrkdwn(heading)}")}}]
        if answer is not None:
            blocks += [markdown_block(safe_markdown(part)) for part in answer_parts(answer.answer)[:3]]
            if (sources := sources_block(answer.references, self.prompts)) is not None:
                blocks.append(sources)
        try:
            await self.client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=plain(heading),
                                               blocks=blocks)
        except SlackApiError as exc:
            log.warning("slack: the revisit note for answer %s was not posted (%s)", revisit.answer.answer_id,
                        describe(exc))
            return False
        return True
