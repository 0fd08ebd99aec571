"""Microsoft Teams surface: a Teams SDK for Python `App` (microsoft-teams-apps) that serves
`Askdesk` in personal chats, channels and group chats, plus the facility message extension
(served by `askdesk serve teams`, see bot/commands/serve.py)."""

import warnings

from microsoft_teams.common.experimental import ExperimentalWarning

# The SDK warns about its own preview features when it is imported; none are ours to act on.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

from bot.teams.app import TeamsBot, build_teams_bot  # noqa: E402

__all__ = ["TeamsBot", "build_teams_bot"]
