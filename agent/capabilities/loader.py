"""The deployment's capabilities: every capability plug-in's (agent/plugins.py) `build`, once
per service. askdesk's knowledge base and registries are plug-ins too (pyproject.toml), so a
third party's capability joins the same way and the turn needs no change for it."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from agent.capabilities.base import Capabilities, Capability

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.plugins import Registrar
    from agent.prompts import PromptSet
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.capabilities")

RESERVED = ("offtopic", "smalltalk", "clarify", "action")  # the turn's own routes

_given: list["Registrar"] = []  # registrars handed in by `capabilities_from`, innermost last


@contextmanager
def capabilities_from(registrar: "Registrar") -> Iterator["Registrar"]:
    """Services built inside take their capabilities from `registrar`'s (tests of a capability
    plug-in: `load_plugins` of its own entry points, without installing a package)."""
    _given.append(registrar)
    try:
        yield registrar
    finally:
        _given.remove(registrar)


class CapabilityError(RuntimeError):
    """The deployment's capabilities cannot be built (one line: a start-up error)."""


def load_capabilities(runtime: "Runtime | None", settings: "Settings",
                      registrar: "Registrar | None" = None) -> Capabilities:
    """Every registered capability plug-in's `build(runtime, settings)`, knowledge first. A
    plug-in class that is not a `Capability` is one ERROR line and is left out; an error of a
    `build` is the deployment's configuration (a broken registry declaration) and fails here,
    at start-up, not in the middle of a turn."""
    if registrar is None and _given:
        registrar = _given[-1]
    if registrar is None:
        from agent.plugins import plugins

        registrar = plugins()
    built: list[Capability] = []
    for name, cls in registrar.capabilities.items():
        if not (isinstance(cls, type) and issubclass(cls, Capability)):
            log.error("capability plug-in %s is not a Capability subclass (agent/capabilities/base.py): left out", name)
            continue
        built.extend(c for c in cls.build(runtime, settings) if isinstance(c, Capability))
    capabilities = Capabilities.ordered(built)
    names = [c.name for c in capabilities]
    for name in names:
        if not name or name in RESERVED or names.count(name) > 1:
            raise CapabilityError(f"capability name {name!r} is empty, reserved ({', '.join(RESERVED)}) or "
                                  "used twice: each capability's name is its route")
    from agent.capabilities.knowledge import KnowledgeCapability

    if not any(isinstance(c, KnowledgeCapability) for c in capabilities):  # the turn's gate and retrieval read it
        raise CapabilityError("no knowledge capability is registered: askdesk's own plug-ins are missing from "
                              "this environment (run `pip install -e .` again)")
    return capabilities


def load_registries(runtime: "Runtime | None", prompts: "PromptSet | None") -> list[Capability]:
    """Every declared registry as a capability (DeclarationError at start-up for a broken one)."""
    if runtime is None:
        return []
    from agent.registry.loader import declaration_paths

    if not declaration_paths(runtime.settings):
        return []  # none declared: the registry engine (its parser, gazetteers) is not even imported
    from agent.capabilities.registry import registry_capabilities

    return list(registry_capabilities(runtime, prompts))
