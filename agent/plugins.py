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
    loaded: list[Loaded] = field(default_factory=list)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # (plugin, package, error)

    def source(self, cls: type) -> None:
        """A knowledge source kind (agent/sources/base.py: `Source`)."""
        from agent.sources.base import Source

        if not (isinstance(cls, type) and issubclass(cls, Source)) or not getattr(cls, "kind", ""):
            raise TypeError(f"{cls!r} is not a Source subclass with a kind")
        if cls.kind in self.sources:
            raise ValueError(f"source kind {cls.kind!r} is registered twice")
        self.sources[cls.kind] = cls
        self.loaded.append(Loaded("source", cls.kind, self.plugin, self.package, self.version,
                                  tuple(cls.env_variables()), tuple(cls.missing_env())))


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
        before_sources, before_loaded = dict(registrar.sources), list(registrar.loaded)
        try:
            module = ep.load()
            module.register(registrar)
        except Exception as exc:  # noqa: BLE001 - one bad plug-in never takes the others down
            registrar.sources, registrar.loaded = before_sources, before_loaded
            error = f"{type(exc).__name__}: {exc}".strip()
            registrar.failed.append((ep.name, package, error))
            log.warning("plug-in %s (%s) was not loaded: %s", ep.name, package, error)
    registrar.plugin = registrar.package = registrar.version = ""
    return registrar


@lru_cache(maxsize=1)
def plugins() -> Registrar:
    """This process's plug-ins, discovered once."""
    return load_plugins()
