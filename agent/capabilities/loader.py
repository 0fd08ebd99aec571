"""The registries of a deployment, built once per runtime."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.capabilities.base import Capability

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.runtime import Runtime
    from agent.understanding.domain import Domain


def load_registries(runtime: "Runtime | None", settings: "Settings", domain: "Domain") -> list[Capability]:
    if runtime is None:
        return []
    from agent.capabilities.facility_legacy import FacilityCapability

    return [FacilityCapability(runtime, domain)]
