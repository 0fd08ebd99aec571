"""Slack's agent messaging experience (manifest `agent_view`): the bot's messages tab.

When someone opens the messages tab (`app_home_opened`, tab "messages"), the composer
gets suggested prompts — set without a `thread_ts`, as agent apps must — and a person
whose DM with the bot is still empty gets a one-line welcome. Their messages then
arrive as ordinary DMs and are answered by bot/slack/events.py, with the thread status
("is thinking…") while the answer is being prepared. The welcome and the prompts' heading are
said in the person's Slack language (`users.info` locale) when askdesk speaks it, else English.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_sdk.web.async_client import AsyncWebClient

from agent.config import Settings
from agent.prompts import speaking
from bot.cache import bounded
from bot.note_language import locale_language
from bot.slack.home import home_opened
from bot.slack.people import user_locale
from bot.slack.settings import SlackSettings
from bot.slack.reply import describe

log = logging.getLogger("askdesk.slack")

PROMPT_TITLE_CHARS = 75
MAX_PROMPTS = 4
RECHECK_S = 24 * 3600  # ask Slack whether a DM is empty at most once a day per person


async def suggestions(slack: SlackSettings, askdesk: Any) -> list[dict[str, str]]:
    """The setting's prompts, else the deployment's (agent/turn/service.py: suggested_prompts)."""
    try:
        prompts = await askdesk.suggested_prompts(slack.suggested_prompts)
    except Exception as exc:  # the knowledge base is down: no suggestions, never a failure
        log.info("slack: suggested prompts unavailable (%s)", type(exc).__name__)
        prompts = []
    return [{"title": p if len(p) <= PROMPT_TITLE_CHARS else p[:PROMPT_TITLE_CHARS - 1] + "…", "message": p}
            for p in prompts[:MAX_PROMPTS]]


async def user_language(client: AsyncWebClient, askdesk: Any, user: str | None) -> str | None:
    """The language of `user`'s Slack locale when askdesk speaks it; None: English."""
    return locale_language(askdesk.prompts, await user_locale(client, user))


def register(app: AsyncApp) -> None:
    checked = bounded(50_000, RECHECK_S)

    @app.event("app_home_opened")
    async def messages_tab_opened(event: dict, client: AsyncWebClient, settings: Settings, askdesk: Any,
                                  slack_settings: SlackSettings, set_suggested_prompts: Any) -> None:
        if event.get("tab") == "home":
            await home_opened(event, client, settings, askdesk)  # the report, for admins (bot/slack/home.py)
            return
        if event.get("tab") != "messages":
            return
        user, channel = event.get("user"), event.get("channel")
        with speaking(await user_language(client, askdesk, user)):
            await _suggest(slack_settings, askdesk, set_suggested_prompts)
            if not user or not channel or user in checked:
                return
            checked[user] = True
            try:
                history = await client.conversations_history(channel=channel, limit=1)
                if not history.get("messages"):
                    await client.chat_postMessage(channel=channel, text=askdesk.prompts.render(
                        "welcome", user=user, commands=askdesk.commands()))
            except Exception as exc:
                log.info("slack: welcome not sent (%s)", describe(exc))

    @app.event("assistant_thread_started")
    async def legacy_thread_started(event: dict, client: AsyncWebClient, slack_settings: SlackSettings,
                                    askdesk: Any, set_suggested_prompts: Any) -> None:
        """An app still installed with the legacy `assistant_view` manifest (prompts per thread)."""
        user = (event.get("assistant_thread") or {}).get("user_id")
        with speaking(await user_language(client, askdesk, user)):
            await _suggest(slack_settings, askdesk, set_suggested_prompts)

    @app.event("assistant_thread_context_changed")
    async def legacy_context_changed() -> None:
        """The user switched channels with the legacy pane open; answers do not depend on it."""


async def _suggest(slack: SlackSettings, askdesk: Any, set_suggested_prompts: Any) -> None:
    """The suggested prompts under their heading (in the language being spoken); never raises."""
    prompts = await suggestions(slack, askdesk)
    if prompts and set_suggested_prompts is not None:
        try:
            await set_suggested_prompts(prompts=prompts, title=askdesk.prompts.render("suggested_prompts_title"))
        except Exception as exc:
            log.info("slack: suggested prompts unavailable (%s)", describe(exc))
