"""The models a service runs with: router and agent chains from settings, or why there are none."""

from __future__ import annotations

from dataclasses import dataclass

from agent.config import Settings
from agent.prompts import PromptSet
from agent.providers.base import Model
from agent.providers.chain import ModelChain
from agent.providers.factory import enabled_by, no_model_hint


@dataclass
class ServiceModels:
    """The models of a service; built from settings by make_models (tests inject their own)."""

    router: Model | None  # None: pre-filter and heuristics only
    agent: Model | None  # None: search-only answers
    notice: str | None  # why answers are search-only


def make_models(settings: Settings, prompts: PromptSet) -> ServiceModels:
    agent = ModelChain.for_agent(settings)
    if agent.configured:
        router = ModelChain.for_router(settings)
        return ServiceModels(router=router if router.configured else None, agent=agent, notice=None)
    if settings.agent_model:
        env = enabled_by(settings.agent_model.split("/", 1)[0])
        notice = prompts.render("no_provider", reason=f"{settings.agent_model} has no key", env_hint=env)
    else:
        notice = prompts.render("no_provider", reason="no model and no provider key found", env_hint=no_model_hint())
    return ServiceModels(router=None, agent=None, notice=notice)
