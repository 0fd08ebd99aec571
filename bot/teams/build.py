"""Build the Teams bot: a `TeamsBot` (bot/teams/app.py) with the Teams SDK `App` and the
handlers of each concern registered on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.config import Settings
from bot.teams.app import TeamsBot
from bot.teams.credentials import TeamsAuth
from bot.teams.settings import SURFACE
from bot.turn import TurnRunner

if TYPE_CHECKING:
    from agent.turn.service import Askdesk


def build_teams_bot(settings: Settings, askdesk: "Askdesk", *, auth: TeamsAuth, adapter: Any = None,
                    runner: TurnRunner | None = None) -> TeamsBot:
    """The Teams bot with its handlers registered; `adapter` is the SDK HTTP server adapter
    (bot/teams/server.py gives one bound to ASKDESK_TEAMS_PORT); `runner`: the turn runner
    shared with the process's other surfaces."""
    from microsoft_teams.apps import App

    from bot.teams import escalation, extension, feedback, messages, welcome
    from bot.teams.revisit import TeamsRevisitDesk

    bot = TeamsBot(settings=settings, askdesk=askdesk, auth=auth, runner=runner or TurnRunner(askdesk))
    options: dict[str, Any] = dict(
        client_id=auth.client_id, client_secret=auth.client_secret, tenant_id=auth.tenant_id,
        dangerously_allow_unauthenticated_requests=auth.dev_mode,
        fetch_user_token=False, state=False, telemetry={"agent365": False},
    )
    if adapter is not None:
        options["http_server_adapter"] = adapter
    bot.app = App(**options)
    if hasattr(adapter, "early_ack"):
        from microsoft_teams.apps.auth import InboundActivityTokenValidator

        validator = (None if auth.dev_mode or not auth.client_id
                     else InboundActivityTokenValidator(auth.client_id, cloud=bot.app.cloud))
        adapter.early_ack(bot.spawn, validator=validator, dev_mode=auth.dev_mode)
    messages.register(bot)
    bot.runner.escalation_desks.register(SURFACE, escalation.TeamsDesk(bot),
                                         channel=bot.teams_settings.escalation_channel)
    bot.runner.revisits.register(SURFACE, TeamsRevisitDesk(bot))
    extension.register(bot)
    feedback.register(bot)
    welcome.register(bot)
    return bot
