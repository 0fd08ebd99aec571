"""A surface: where people reach askdesk (Slack, Teams, an MCP client, a web chat). A surface is
a folder and one entry point: its module's `register(r)` calls `r.surface(MySurface)`
(agent/plugins.py), and `askdesk serve <name>` runs it next to the others, over one service and
one turn runner, with no line of the core naming it.

`Surface` is a class with hooks that do nothing until a surface needs them:

- `settings`: its own settings class (agent/config.py: `PluginSettings`, env `ASKDESK_<NAME>_…`);
- `__init__(settings)`: read and check its configuration, no I/O (`SurfaceError`: one line);
- `connect()`: reach the platform before anything is opened (a rejected token fails now);
- `start(desk)`: serve; returns the coroutine function that stops it;
- `target(ref)`: whether a configured escalation channel id is one of its channels;
- `review_notifier()`: how it messages a learned answer's owner before the answer's review date;
- `env_variables()` / `missing_env()`: what `askdesk plugins` shows.

What every surface decides the same way (privacy, which buttons an answer offers, who may press
them) lives in the shared runner (bot/turn.py, bot/permissions.py), not here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from pydantic_settings import BaseSettings

from agent.config import PluginSettings, Settings
from bot.escalation import Target

if TYPE_CHECKING:
    from agent.learned import Notifier
    from agent.turn.service import Askdesk
    from bot.turn import TurnRunner

Stop = Callable[[], Awaitable[None]]


class SurfaceError(Exception):
    """A surface cannot start as configured (credentials, a busy port): one line, exit code 2."""


@dataclass
class Desk:
    """What `askdesk serve` shares with every surface it starts: the settings, the service, the
    turn runner (one rate limit, one set of answer records, the escalation desks) and the bind
    address of HTTP listeners."""

    settings: Settings
    askdesk: "Askdesk"
    runner: "TurnRunner"
    host: str

    def say(self, line: str) -> None:
        """A start-up line on stderr (`askdesk: …`)."""
        typer.echo(f"askdesk: {line}", err=True)


class Surface:
    """One surface `askdesk serve` can run; subclasses set `name` and override what they need."""

    name: ClassVar[str] = ""
    settings: ClassVar[type[BaseSettings] | None] = None  # its own settings class, if it has any

    def __init__(self, settings: Settings) -> None:
        self.core = settings
        self.app: Any = None  # the running bot, for tests and benchmarks (`Served.<name>`)
        self.port: int | None = None  # where it listens, if it does (`Served.<name>_port`)

    def config(self) -> Any:
        """This surface's own settings (`settings.of`), with what `Settings` was given for it."""
        cls = type(self).settings
        if cls is None:
            return None
        return cls.of(self.core) if issubclass(cls, PluginSettings) else cls()

    async def connect(self) -> None:
        """Reach the platform before the stores open: a rejected token fails before anything starts."""

    async def start(self, desk: Desk) -> Stop:
        """Start serving; the coroutine function that stops it (called once, at shutdown)."""
        raise NotImplementedError(f"surface {self.name!r} has no start()")

    @classmethod
    def target(cls, ref: str) -> Target | None:
        """`ref` (a configured escalation channel) as one of this surface's channels; None: not one."""
        return None

    def review_notifier(self) -> "Notifier | None":
        """How this surface, once started, messages a learned answer's owner it knows (the review
        reminder, agent/knowledge/learned_review.py); None: it cannot."""
        return None

    @classmethod
    def env_variables(cls) -> list[str]:
        """The environment variables its settings are read from."""
        if cls.settings is None:
            return []
        if issubclass(cls.settings, PluginSettings):
            return [cls.settings.env_names(name)[0] for name in cls.settings.model_fields]
        prefix = cls.settings.model_config.get("env_prefix", "")
        return [f"{prefix}{name}".upper() for name in cls.settings.model_fields]

    @classmethod
    def missing_env(cls) -> list[str]:
        """Required variables that are not set (none, unless a surface says so)."""
        return []
