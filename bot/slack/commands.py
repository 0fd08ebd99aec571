"""Registry commands (`/NAME text`): one slash command per command the deployment
declares, searched without a model unless a router model is configured.

Acked at once with a short "Searching…" (Slack's 3-second rule), then the command runs through
the turn runner and the service (with a router model, words the parser could not place get one
extraction call) and the result replaces it through `respond` (the response_url): a compact
list, visible only to the caller, with a "Share in channel" button. Empty text or "help" gets
the usage straight in the ack. Each command needs its slash command in the Slack app manifest
(manifest.yml declares the demo's). The acknowledgement, the result's notes and any error are
said in the language of the command's text when it is long enough to tell, else in the
person's Slack language (`users.info` locale), else English (bot/note_language.py).
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from agent.capabilities.base import Command
from agent.prompts import speaking
from bot.note_language import locale_language, spoken
from bot.slack.blocks import record_blocks, records_text, usage_blocks
from bot.slack.escape import safe_mrkdwn
from bot.slack.people import user_locale
from bot.turn import TurnRunner, new_id

log = logging.getLogger("askdesk.slack")

HELP_WORDS = {"help", "-h", "--help", "?"}
LOCALE_WAIT_S = 1.0  # the ack must leave within Slack's 3 seconds


def register(app: AsyncApp, commands: list[Command]) -> None:
    for command in commands:
        app.command(f"/{command.name}")(_listener(command))


def _listener(command: Command):
    async def run_command(ack: AsyncAck, body: dict, respond: AsyncRespond, runner: Any,
                          client: AsyncWebClient) -> None:
        text = (body.get("text") or "").strip()
        if not text or text.lower() in HELP_WORDS:
            await ack(text=safe_mrkdwn(command.help()), blocks=usage_blocks(command.help()), response_type="ephemeral")
            return
        with speaking(await command_language(runner, text, client, body.get("user_id"))):
            await ack(text=runner.prompts.render("command_searching", records=command.records),
                      response_type="ephemeral")
            await run_and_respond(runner, command, text, respond)

    return run_command


async def command_language(runner: TurnRunner, text: str, client: AsyncWebClient, user: str | None) -> str | None:
    """The command text's language when it is clear ("guarderías para bebés cerca de 78702"), else
    the person's Slack language (a bare "78702" tells nothing); None: English."""
    prompts = runner.prompts
    return (spoken(prompts, runner.askdesk.clear_language(text))
            or locale_language(prompts, await user_locale(client, user, wait=LOCALE_WAIT_S)))


async def run_and_respond(runner: TurnRunner, command: Command, text: str, respond: AsyncRespond, *,
                          shared_by: str | None = None) -> None:
    """Search and answer through the response_url: ephemeral (with Share) or, when shared, in channel."""
    prompts = runner.prompts
    try:
        result = await runner.command(command.name, text)
    except Exception as exc:
        ref = new_id()
        log.error("slack: /%s failed (reference %s): %s", command.name, ref, type(exc).__name__)
        await respond(text=prompts.render("command_error", record=command.record, ref=ref), response_type="ephemeral",
                      replace_original=True)
        return
    if result.is_help:
        await respond(text=safe_mrkdwn(result.reply), blocks=usage_blocks(result.reply), response_type="ephemeral",
                      replace_original=True)
        return
    await respond(
        text=records_text(result, command, prompts),
        blocks=record_blocks(result, command, shareable=shared_by is None, shared_by=shared_by, prompts=prompts),
        response_type="in_channel" if shared_by else "ephemeral",
        replace_original=shared_by is None,
    )
