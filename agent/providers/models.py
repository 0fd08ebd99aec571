"""The models a service runs with: router and agent chains from settings, or why there are none."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

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
    said: Callable[[], str] | None = None  # renders `notice` in the language being spoken (agent.prompts.speaking)


def make_models(settings: Settings, prompts: PromptSet) -> ServiceModels:
    agent = ModelChain.for_agent(settings)
    if agent.configured:
        router = ModelChain.for_router(settings)
        return ServiceModels(router=router if router.configured else None, agent=agent, notice=None)
    model = settings.agent_model
    env = enabled_by(model.split("/", 1)[0]) if model else no_model_hint()
    said = partial(prompts.render, "no_provider", model=model or "", env_hint=env)
    return ServiceModels(router=None, agent=None, notice=said(), said=said)
