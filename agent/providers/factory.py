"""Model specs (`provider/model`) to provider instances.

`openai/gpt-4.1-mini`, `groq/llama-3.1-8b-instant`, `gemini/gemini-2.5-flash`,
`compatible/meta-llama/Llama-3.1-8B-Instruct`, `ollama/llama3.1` — the provider is the
text before the first '/', the model everything after it (model names may contain '/').
A provider without its key raises ProviderNotConfigured naming the env var that enables it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from agent.config import Settings
from agent.providers.base import Provider, ProviderNotConfigured

# Each builder imports its provider module, and with it the SDK, instructor and tenacity, only
# when a provider is built: a process with no model configured (e.g. `askdesk ask` search-only)
# never loads them.


def _backoff(settings: Settings | None):
    from agent.providers.retry import Backoff

    return Backoff.from_settings(settings)


def _openai(settings: Settings | None) -> Provider:
    from agent.providers.openai import OpenAIProvider

    return OpenAIProvider(backoff=_backoff(settings))


def _groq(settings: Settings | None) -> Provider:
    from agent.providers.groq import GroqProvider

    return GroqProvider(backoff=_backoff(settings))


def _gemini(settings: Settings | None) -> Provider:
    from agent.providers.gemini import GeminiProvider

    return GeminiProvider(backoff=_backoff(settings))


def _compatible(name: str) -> Callable[[Settings | None], Provider]:
    def build(settings: Settings | None) -> Provider:
        from agent.providers.compatible import CompatibleProvider

        return CompatibleProvider(name, settings=settings, backoff=_backoff(settings))

    return build


PROVIDERS: dict[str, Callable[[Settings | None], Provider]] = {
    "openai": _openai,
    "groq": _groq,
    "gemini": _gemini,
    "compatible": _compatible("compatible"),
    "ollama": _compatible("ollama"),
}


def parse_spec(spec: str) -> tuple[str, str]:
    """'provider/model' -> (provider, model); a bad spec raises ProviderNotConfigured."""
    provider, _, model = (spec or "").strip().partition("/")
    provider = provider.lower()
    if not provider or not model:
        raise ProviderNotConfigured(
            f"model spec {spec!r} is not provider/model (e.g. openai/gpt-4.1-mini)", provider=provider)
    if provider not in PROVIDERS:
        raise ProviderNotConfigured(
            f"unknown provider {provider!r} in model spec {spec!r}: use one of {', '.join(PROVIDERS)}",
            provider=provider)
    return provider, model


def make_provider(provider_name: str, settings: Settings | None = None) -> Provider:
    """A provider instance reading its key/base URL from the environment (and settings)."""
    name = provider_name.lower()
    if name not in PROVIDERS:
        raise ProviderNotConfigured(f"unknown provider {provider_name!r}: use one of {', '.join(PROVIDERS)}",
                                    provider=name)
    return PROVIDERS[name](settings)


def resolve(spec: str, settings: Settings | None = None) -> tuple[Provider, str]:
    """'provider/model' -> (provider instance, model name)."""
    provider, model = parse_spec(spec)
    return make_provider(provider, settings), model


def configured_status(specs: Iterable[str | None], settings: Settings | None = None) -> list[str]:
    """One message per spec that cannot run (missing key, bad spec); [] when all can.
    No spec at all yields the message telling how to enable an LLM."""
    specs = [s for s in specs if s]
    if not specs:
        return ["No LLM is configured: set ASKDESK_AGENT_MODEL (e.g. openai/gpt-4.1-mini) "
                "and the provider's key (OPENAI_API_KEY, GROQ_API_KEY or GEMINI_API_KEY)"]
    problems = []
    for spec in specs:
        try:
            resolve(spec, settings)
        except ProviderNotConfigured as exc:
            problems.append(f"{spec}: {exc}")
    return problems
