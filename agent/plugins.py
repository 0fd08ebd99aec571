"""Plug-ins: what askdesk finds through the `askdesk.plugins` entry-point group.

Every plug-in package, askdesk's own built-ins included, names a module in its
`pyproject.toml`:

    [project.entry-points."askdesk.plugins"]
    confluence = "agent.sources.confluence"

and that module has `register(r: Registrar)`, which declares what it adds (`r.source(...)`,
and the other kinds as they move onto this mechanism). `load_plugins()` calls each one in
its own try/except: a plug-in that fails to import or to register is one line in the log and
one row with its error in `askdesk plugins`, and the others load. Discovery happens once per
process (cached); tests pass their own entry points.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import metadata
from typing import Any, Iterable

log = logging.getLogger("askdesk.plugins")

GROUP = "askdesk.plugins"
TABLES = ("sources", "providers", "surfaces", "capabilities")


@dataclass(frozen=True)
class Loaded:
    """One thing a plug-in registered, for `askdesk plugins`."""

    kind: str  # "source" (and, as they move here, "surface", "capability", "provider")
    name: str
    plugin: str  # the entry point's name
    package: str
    version: str
    settings: tuple[str, ...] = ()  # the environment variables it reads
    missing: tuple[str, ...] = ()  # required ones that are not set


@dataclass
class Registrar:
    """What `register(r)` is handed. The plug-in's own name and package are filled in by the
    loader, so a plug-in only says what it adds."""

    plugin: str = ""
    package: str = ""
    version: str = ""
    sources: dict[str, type] = field(default_factory=dict)
    providers: dict[str, type] = field(default_factory=dict)
    surfaces: dict[str, type] = field(default_factory=dict)
    capabilities: dict[str, type] = field(default_factory=dict)
    loaded: list[Loaded] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (plugin, package, error)

    def source(self, cls: type) -> None:
        """A knowledge source kind (agent/sources/base.py: `Source`)."""
        from agent.sources.base import Source

        if not (isinstance(cls, type) and issubclass(cls, Source)) or not getattr(cls, "kind", ""):
            raise TypeError(f"{cls!r} is not a Source subclass with a kind")
        self._add("source", self.sources, cls.kind, cls, cls.env_variables(), cls.missing_env())

    def provider(self, cls: type) -> None:
        """A model provider: `<name>/<model>` in ASKDESK_AGENT_MODEL and friends."""
        self._add("provider", self.providers, _name_of(cls), cls, *_env_of(cls))

    def surface(self, cls: type) -> None:
        """A surface `askdesk serve <name>` can run (Slack, Teams, a web chat…)."""
        self._add("surface", self.surfaces, _name_of(cls), cls, *_env_of(cls))

    def capability(self, cls: type) -> None:
        """A body of data the agent answers from, with its tools."""
        self._add("capability", self.capabilities, _name_of(cls), cls, *_env_of(cls))

    def _add(self, kind: str, table: dict[str, type], name: str, cls: type, env: Iterable[str],
             missing: Iterable[str]) -> None:
        if name in table:
            raise ValueError(f"{kind} {name!r} is registered twice")
        table[name] = cls
        self.loaded.append(Loaded(kind, name, self.plugin, self.package, self.version, tuple(env), tuple(missing)))


def _name_of(cls: type) -> str:
    name = getattr(cls, "name", "")
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls!r} has no `name`")
    return name


def _env_of(cls: type) -> tuple[list[str], list[str]]:
    """The variables a plug-in reads (`env_variables()`) and the required ones that are unset
    (`missing_env()`), when it declares them."""
    env = list(cls.env_variables()) if hasattr(cls, "env_variables") else []
    missing = list(cls.missing_env()) if hasattr(cls, "missing_env") else []
    return env, missing


def _entry_points() -> list[metadata.EntryPoint]:
    return sorted(metadata.entry_points(group=GROUP), key=lambda ep: (ep.name, ep.value))


def load_plugins(entry_points: Iterable[Any] | None = None) -> Registrar:
    """Call every plug-in's `register`; a broken one is logged in one line and skipped."""
    registrar = Registrar()
    for ep in (_entry_points() if entry_points is None else entry_points):
        dist = getattr(ep, "dist", None)
        package = dist.metadata["Name"] if dist is not None else "?"
        version = dist.version if dist is not None else "?"
        registrar.plugin, registrar.package, registrar.version = ep.name, package, version
        before = {k: dict(getattr(registrar, k)) for k in TABLES}, list(registrar.loaded)
        try:
            module = ep.load()
            module.register(registrar)
        except Exception as exc:  # noqa: BLE001 - one bad plug-in never takes the others down
            for key, table in before[0].items():
                setattr(registrar, key, table)
            registrar.loaded = before[1]
            error = f"{type(exc).__name__}: {exc}".strip()
            registrar.failed.append((ep.name, package, error))
            log.warning("plug-in %s (%s) was not loaded: %s", ep.name, package, error)
    registrar.plugin = registrar.package = registrar.version = ""
    return registrar


@lru_cache(maxsize=1)
def plugins() -> Registrar:
    """This process's plug-ins, discovered once."""
    return load_plugins()
