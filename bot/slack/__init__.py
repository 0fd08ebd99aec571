"""Slack surface: a slack_bolt AsyncApp that serves `Askdesk` in channels, DMs, the agent
messages tab and the `/facility` command (Socket Mode or HTTP, see bot/commands/serve.py)."""

from bot.slack.app import SlackApp, build_slack_app

__all__ = ["SlackApp", "build_slack_app"]
