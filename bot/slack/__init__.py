"""Slack surface: a slack_bolt AsyncApp that serves `Askdesk` in channels, DMs, the agent
messages tab and the registries' slash commands (Socket Mode or HTTP; `askdesk serve slack`: bot/slack/plugin.py)."""
