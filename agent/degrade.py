"""What the user is told when the models fail or run out of the turn's time.

The reply is the search-only answer (passages or facility results, with sources) headed by a
note: a rejected key is a configuration problem for an administrator (naming the variable),
anything else — hang, timeout, 429/5xx, empty or unusable output — the model not answering
right now. The apology with a reference id is kept for when the search fails too.
"""

from __future__ import annotations

from agent.prompts import PromptSet
from agent.providers.base import ProviderConfigError


def model_failure_note(exc: BaseException, prompts: PromptSet) -> str:
    if isinstance(exc, ProviderConfigError) or isinstance(exc.__cause__, ProviderConfigError):
        error = exc if isinstance(exc, ProviderConfigError) else exc.__cause__
        return prompts.render("model_misconfigured", env=error.key_env or "the model provider's API key")
    return prompts.render("model_unavailable")


def failure_apology(exc: BaseException, prompts: PromptSet, ref: str) -> str:
    """The apology when no search results could be shown either."""
    if isinstance(exc, ProviderConfigError):
        return prompts.render("provider_config_error", env=exc.key_env or "the model provider's API key", ref=ref)
    return prompts.render("provider_error", ref=ref)
