"""Start and stop the Teams bot inside `askdesk serve` (bot/teams/plugin.py), next to the other
surfaces, over one Askdesk."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.teams.app import TeamsBot
from bot.teams.build import build_teams_bot
from bot.teams.credentials import TeamsAuth
from bot.teams.server import MESSAGES_PATH, TeamsListener, bind
from bot.teams.settings import TeamsSettings

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.turn.service import Askdesk
    from bot.turn import TurnRunner


class TeamsStartError(Exception):
    pass


@dataclass
class RunningTeams:
    bot: TeamsBot
    listener: TeamsListener

    @property
    def port(self) -> int:
        return self.listener.port

    async def stop(self) -> None:
        await self.listener.stop()
        await self.bot.close()


async def start_teams(settings: "Settings", askdesk: "Askdesk", runner: "TurnRunner | None" = None, *, host: str,
                      auth: TeamsAuth) -> RunningTeams:
    # The SDK logs whole activities (message text) at DEBUG: never let them through.
    logging.getLogger("microsoft_teams").setLevel(logging.WARNING)
    port = TeamsSettings.of(settings).port
    try:
        listener = TeamsListener(bind(host, port))
    except OSError as exc:
        raise TeamsStartError(f"cannot listen on {host}:{port} for Teams ({exc.strerror or exc}): "
                              "set ASKDESK_TEAMS_PORT or --teams-port to a free port.") from None
    adapter = listener.adapter()
    adapter.ready = lambda: askdesk.ready
    bot = build_teams_bot(settings, askdesk, auth=auth, adapter=adapter, runner=runner)
    await bot.app.initialize()
    await listener.start()
    return RunningTeams(bot=bot, listener=listener)


def endpoint(host: str, port: int) -> str:
    return f"http://{host}:{port}{MESSAGES_PATH}"
