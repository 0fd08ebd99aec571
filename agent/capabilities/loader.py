"""The registries of a deployment, built once per runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.capabilities.base import Capability

if TYPE_CHECKING:
    from agent.prompts import PromptSet
    from agent.runtime import Runtime


def load_registries(runtime: "Runtime | None", prompts: "PromptSet") -> list[Capability]:
    """Every declared registry as a capability (DeclarationError at start-up for a broken one)."""
    if runtime is None:
        return []
    from agent.registry.loader import declaration_paths

    if not declaration_paths(runtime.settings):
        return []  # none declared: the registry engine (its parser, gazetteers) is not even imported
    from agent.capabilities.registry import registry_capabilities

    return list(registry_capabilities(runtime, prompts))
