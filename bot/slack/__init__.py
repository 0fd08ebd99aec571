"""Slack surface: a slack_bolt AsyncApp that serves `Askdesk` in channels, DMs, the
assistant pane and the `/facility` command (Socket Mode or HTTP, see bot/commands/serve.py)."""

from bot.slack.app import SlackBot, build_slack_bot

__all__ = ["SlackBot", "build_slack_bot"]
