"""Microsoft Teams as a surface of `askdesk serve` (bot/surface.py), registered through the
`askdesk.plugins` entry point `teams`.

The Teams SDK's `POST /api/messages` on `--teams-port`/`ASKDESK_TEAMS_PORT`, with the bot's
credentials (CLIENT_ID, CLIENT_SECRET, TENANT_ID) checked before anything opens, or
ASKDESK_TEAMS_DEV_MODE=true on a developer's machine. The SDK is imported only when the surface
starts.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from agent.config import Settings
from bot.escalation import Target
from bot.surface import Desk, Stop, Surface, SurfaceError
from bot.teams.credentials import DEV_MODE_WARNING, TeamsConfigError, teams_auth
from bot.teams.settings import SURFACE, TeamsSettings

if TYPE_CHECKING:
    from agent.plugins import Registrar


class TeamsSurface(Surface):
    name = SURFACE
    settings = TeamsSettings

    def __init__(self, settings: Settings) -> None:
        super().__init__(settings)
        try:
            self.auth = teams_auth(self.config())
        except TeamsConfigError as exc:
            raise SurfaceError(str(exc)) from None
        if self.auth.dev_mode:
            print(DEV_MODE_WARNING, file=sys.stderr)

    async def start(self, desk: Desk) -> Stop:
        from bot.teams.run import TeamsStartError, endpoint, start_teams
        from bot.teams.server import SWITCH_INTERVAL

        # this process serves: the Teams listener thread gets the GIL back sooner (server.py)
        sys.setswitchinterval(min(SWITCH_INTERVAL, sys.getswitchinterval()))
        try:
            teams = await start_teams(desk.settings, desk.askdesk, desk.runner, host=desk.host, auth=self.auth)
        except TeamsStartError as exc:
            raise SurfaceError(str(exc)) from None
        self.app, self.port = teams.bot, teams.port
        desk.say(f"Teams bot listening on {endpoint(desk.host, teams.port)}")
        return teams.stop

    def review_notifier(self) -> Any:
        """Learned answers' owners on Teams get a card in a personal chat (bot/teams/learned_review.py)."""
        from bot.teams.learned_review import notifier

        return notifier(self.app) if self.app is not None else None

    @classmethod
    def target(cls, ref: str) -> Target | None:
        """A Teams conversation id has a colon (`19:…@thread.tacv2`, `a:…`); a channel of another
        surface's never does."""
        return Target(cls.name, ref) if ":" in ref else None

    @classmethod
    def missing_env(cls) -> list[str]:
        try:
            config = TeamsSettings()
        except ValueError:  # a value that does not parse: `askdesk serve teams` names it
            return []
        if config.dev_mode:
            return []
        return [n for n, v in (("CLIENT_ID", config.client_id), ("CLIENT_SECRET", config.client_secret)) if not v]


def register(r: "Registrar") -> None:
    r.surface(TeamsSurface)
