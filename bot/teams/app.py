"""Build the Teams app: one `TeamsBot` (process-wide state) and a Teams SDK `App` whose
handlers delegate to the modules that hold the behaviour (messages, extension, feedback,
welcome).

Activities other than invokes are acknowledged as soon as they are authenticated (see
bot/teams/server.py); the SDK then dispatches them to our handlers, and the answer is
worked out in a background task and sent through the Bot Connector, so Teams never waits
on the agent. Invokes (message extension, feedback) answer in their HTTP response.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Coroutine

from agent.config import Settings
from agent.prompts import PromptSet, default_prompts
from bot.tasks import BackgroundTasks
from bot.teams.credentials import TeamsAuth
from bot.turn import TurnRunner

if TYPE_CHECKING:
    from microsoft_teams.apps import App

    from agent.turn.service import Askdesk

log = logging.getLogger("askdesk.teams")

# Texts the Teams surface renders (prompts/teams.yaml and messages.yaml), with their variables.
TEAMS_PROMPTS: dict[str, set[str]] = {
    "teams_welcome": {"capabilities", "commands", "scope"},
    "teams_records_title": {"records", "summary"},
    "teams_extension_hint": {"example"},
    "teams_sources": set(),
}


def surface_prompts(prompts: PromptSet) -> PromptSet:
    """The service's prompts, with the packaged Teams texts filling in for a custom prompts_dir
    that has none (a prompts_dir made for Slack keeps working)."""
    merged = dict(default_prompts().prompts)
    merged.update(prompts.prompts)
    found = PromptSet(merged)
    found.require(TEAMS_PROMPTS)
    return found


@dataclass
class TeamsBot:
    """Process-wide Teams state shared by every handler."""

    settings: Settings
    askdesk: "Askdesk"
    auth: TeamsAuth
    runner: TurnRunner
    app: "App" = field(init=False)
    prompts: PromptSet = field(init=False)
    no_streaming: set[str] = field(default_factory=set)  # conversations whose stream was refused
    no_targeted: set[str] = field(default_factory=set)  # tenants that refused a targeted message (bot/teams/private.py)
    tasks: BackgroundTasks = field(default_factory=lambda: BackgroundTasks("teams"))
    connector: tuple[str | None, str] = (None, "")  # the last activity's serviceUrl and tenant (TeamsDesk)

    def __post_init__(self) -> None:
        self.prompts = surface_prompts(self.askdesk.prompts)
        self.dedupe = self.runner.deliveries  # activities and welcomes, once across replicas
        self.askers = self.askdesk.state  # who asked in each reply chain (remember_asker / asker)

    def text(self, name: str, **values: Any) -> str:
        return self.prompts.render(name, **values)

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the HTTP response; `drain()` waits for it (tests, shutdown)."""
        self.tasks.spawn(work)

    async def drain(self, timeout: float = 10.0) -> None:
        await self.tasks.drain(timeout)

    async def close(self) -> None:
        await self.drain(timeout=30)


def build_teams_bot(settings: Settings, askdesk: "Askdesk", *, auth: TeamsAuth, adapter: Any = None,
                    runner: TurnRunner | None = None) -> TeamsBot:
    """The Teams bot with its handlers registered; `adapter` is the SDK HTTP server adapter
    (bot/teams/server.py gives one bound to ASKDESK_TEAMS_PORT); `runner`: the turn runner
    shared with the process's other surfaces."""
    from microsoft_teams.apps import App

    from bot.teams import escalation, extension, feedback, messages, welcome

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
    bot.runner.escalation_desks.register("teams", escalation.TeamsDesk(bot))
    extension.register(bot)
    feedback.register(bot)
    welcome.register(bot)
    return bot
