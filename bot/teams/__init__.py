"""Microsoft Teams surface: a Teams SDK for Python `App` (microsoft-teams-apps) that serves
`Askdesk` in personal chats, channels and group chats, plus the registries' message extension
(served by `askdesk serve teams`: bot/teams/plugin.py)."""
