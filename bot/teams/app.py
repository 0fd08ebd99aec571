"""The Teams app's process-wide state: one `TeamsBot`, which the handlers (messages,
extension, feedback, welcome) are handed. bot/teams/build.py builds it with the Teams SDK
`App` and registers the handlers (so this module imports none of them).

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
from bot.teams.settings import TeamsSettings
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
    packaged = default_prompts()
    merged = dict(packaged.prompts)
    merged.update(prompts.prompts)
    translations = {lang: {**{n: p for n, p in packaged.translations.get(lang, {}).items() if n not in prompts.prompts},
                           **prompts.translations.get(lang, {})}
                    for lang in {*packaged.translations, *prompts.translations}}  # each in the asker's language too
    found = PromptSet(merged, translations)
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
    teams_settings: TeamsSettings = field(init=False)  # Teams' own (ASKDESK_TEAMS_*)
    no_streaming: set[str] = field(default_factory=set)  # conversations whose stream was refused
    no_targeted: set[str] = field(default_factory=set)  # tenants that refused a targeted message (bot/teams/private.py)
    tasks: BackgroundTasks = field(default_factory=lambda: BackgroundTasks("teams"))
    connector: tuple[str | None, str] = (None, "")  # the last activity's serviceUrl and tenant (TeamsDesk)

    def __post_init__(self) -> None:
        self.prompts = surface_prompts(self.askdesk.prompts)
        self.teams_settings = TeamsSettings.of(self.settings)
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
