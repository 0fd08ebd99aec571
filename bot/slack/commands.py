"""`/facility <text>`: the facility registry, without an LLM unless a router model is configured.

Acked at once with a short "Searching…" (Slack's 3-second rule), then the deterministic
facility command runs (with a router model, words it could not place get one extraction call:
agent/facilities/extraction.py) and the result replaces it through `respond` (the response_url):
a compact list, visible only to the caller, with a "Share in channel" button. Empty text
gets the usage help straight in the ack.
"""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING, Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond

from agent.facilities.command import run_facility_command
from bot.slack.blocks import facility_blocks, facility_text, note_blocks

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.slack")


def register(app: AsyncApp) -> None:
    @app.command("/facility")
    async def facility(ack: AsyncAck, command: dict, respond: AsyncRespond, runtime: Any, askdesk: Any) -> None:
        text = (command.get("text") or "").strip()
        if not text:
            usage = askdesk.prompts.render("facility_usage")
            await ack(text=usage, blocks=note_blocks(usage), response_type="ephemeral")
            return
        await ack(text=askdesk.prompts.render("facility_searching"), response_type="ephemeral")
        await run_and_respond(runtime, askdesk.prompts, text, respond, model=askdesk.models.router)


async def run_and_respond(runtime: "Runtime | None", prompts: "PromptSet", text: str, respond: AsyncRespond, *,
                          shared_by: str | None = None, model: Any | None = None) -> None:
    """Search and answer through the response_url: ephemeral (with Share) or, when shared, in channel."""
    try:
        result = await run_facility_command(runtime, text, model=model, prompts=prompts)
    except Exception as exc:
        ref = uuid.uuid4().hex[:12]
        log.error("slack: /facility failed (reference %s): %s", ref, type(exc).__name__)
        await respond(text=prompts.render("facility_error", ref=ref), response_type="ephemeral", replace_original=True)
        return
    if result.is_help:
        help_text = f"```\n{result.reply}\n```"
        await respond(text=result.reply, blocks=note_blocks(help_text), response_type="ephemeral", replace_original=True)
        return
    await respond(
        text=facility_text(result, prompts),
        blocks=facility_blocks(result, shareable=shared_by is None, shared_by=shared_by, prompts=prompts),
        response_type="in_channel" if shared_by else "ephemeral",
        replace_original=shared_by is None,
    )
