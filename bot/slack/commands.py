"""`/facility <text>`: the facility registry without the LLM.

Acked at once with a short "Searching…" (Slack's 3-second rule), then the deterministic
facility command runs and the result replaces it through `respond` (the response_url):
a compact list, visible only to the caller, with a "Share in channel" button. Empty text
gets the usage help straight in the ack.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.slack.blocks import facility_blocks, facility_text, note_blocks

if TYPE_CHECKING:
    from agent.facilities.command import FacilityCommandResult
    from bot.slack.app import SlackBot

log = logging.getLogger("askdesk.slack")

USAGE = (
    "*Usage:* `/facility <what and where>` — for example\n"
    "• `/facility infant care near 78702`\n"
    "• `/facility accredited centers in San Antonio with after-school care`\n"
    "• `/facility within 10 miles of Richland Hills`\n"
    "Understood: a zip code, city or county; “near X” / “within N miles of X”; ages (infant, toddler, "
    "pre-k, school-age); features (after-school, special needs, accredited, transportation, drop-in…)."
)


async def search(bot: "SlackBot", text: str) -> "FacilityCommandResult":
    from agent.facilities.command import run_facility_command

    return await run_facility_command(bot.runtime, text)


def register(bot: "SlackBot") -> None:
    @bot.app.command("/facility")
    async def facility(ack: AsyncAck, command: dict, respond: AsyncRespond) -> None:
        async with bot.working():
            text = (command.get("text") or "").strip()
            if not text:
                await ack(text=USAGE, blocks=note_blocks(USAGE), response_type="ephemeral")
                return
            await ack(text=":mag: Searching facilities…", response_type="ephemeral")
            await run_and_respond(bot, text, respond)


async def run_and_respond(bot: "SlackBot", text: str, respond: AsyncRespond, *, shared_by: str | None = None) -> None:
    """Search and answer through the response_url: ephemeral (with Share) or, when shared, in channel."""
    try:
        result = await search(bot, text)
    except Exception:
        ref = uuid.uuid4().hex[:12]
        log.exception("slack: /facility failed (reference %s)", ref)
        message = f"Sorry, the facility search is unavailable right now. Please try again later. (reference {ref})"
        await respond(text=message, response_type="ephemeral", replace_original=True)
        return
    if result.is_help:
        help_text = f"```\n{result.reply}\n```"
        await respond(text=result.reply, blocks=note_blocks(help_text), response_type="ephemeral", replace_original=True)
        return
    await respond(
        text=facility_text(result),
        blocks=facility_blocks(result, shareable=shared_by is None, shared_by=shared_by),
        response_type="in_channel" if shared_by else "ephemeral",
        replace_original=shared_by is None,
    )
