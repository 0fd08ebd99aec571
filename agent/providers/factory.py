"""Model specs (`provider/model`) to provider instances, from the providers the plug-ins registered.

`openai/gpt-4.1-mini`, `groq/llama-3.1-8b-instant`, `gemini/gemini-2.5-flash`,
`compatible/meta-llama/Llama-3.1-8B-Instruct`, `ollama/llama3.1` — the provider is the text
before the first '/', the model everything after it (model names may contain '/'). The
providers are the `ProviderPlugin` classes registered through the `askdesk.plugins` entry points
(agent/plugins.py; askdesk's own are plug-ins too), so a new provider needs no line here.
A provider without its key raises ProviderNotConfigured naming the env var that enables it.

Discovery imports each provider module but no SDK: a provider module imports its SDK,
instructor and tenacity when a provider is built, so a process with no model configured
(e.g. `askdesk ask` search-only) never loads them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from agent.config import Settings
from agent.plugins import Registrar, plugins
from agent.providers.base import Provider, ProviderNotConfigured, ProviderPlugin

ROLES = ("agent", "router")

_given: list[Registrar] = []  # registrars handed in by `providers_from`, innermost last


def registered() -> dict[str, type[ProviderPlugin]]:
    """name -> provider class: this process's plug-ins (or the registrar `providers_from` gave)."""
    return dict((_given[-1] if _given else plugins()).providers)


@contextmanager
def providers_from(registrar: Registrar) -> Iterator[Registrar]:
    """Specs resolve against `registrar`'s providers inside (tests: `load_plugins` of their own
    entry points, without installing a package); the installed plug-ins again after."""
    _given.append(registrar)
    try:
        yield registrar
    finally:
        _given.remove(registrar)


def provider_class(name: str) -> type[ProviderPlugin]:
    """The registered provider called `name`; an unknown one names those that are loaded."""
    providers = registered()
    key = name.strip().lower()
    if key not in providers:
        raise ProviderNotConfigured(
            f"unknown provider {name!r}: use one of {', '.join(sorted(providers)) or '(none loaded)'}", provider=key)
    return providers[key]


def parse_spec(spec: str) -> tuple[str, str]:
    """'provider/model' -> (provider, model); a bad spec or an unknown provider raises ProviderNotConfigured."""
    provider, _, model = (spec or "").strip().partition("/")
    provider = provider.lower()
    if not provider or not model:
        raise ProviderNotConfigured(
            f"model spec {spec!r} is not provider/model (e.g. openai/gpt-4.1-mini)", provider=provider)
    try:
        provider_class(provider)
    except ProviderNotConfigured as exc:
        raise ProviderNotConfigured(f"{exc} (in model spec {spec!r})", provider=provider) from None
    return provider, model


def make_provider(provider_name: str, settings: Settings | None = None) -> Provider:
    """A provider instance reading its key/base URL from the environment (and settings). A
    provider whose SDK is not installed is not configured, like one without its key."""
    from agent.providers.retry import Backoff

    cls = provider_class(provider_name)
    try:
        return cls.build(settings, Backoff.from_settings(settings))
    except ImportError as exc:
        raise ProviderNotConfigured(f"{cls.label or cls.name} needs a package that is not installed: "
                                    f"{exc.name or exc}", provider=cls.name) from exc


def resolve(spec: str, settings: Settings | None = None) -> tuple[Provider, str]:
    """'provider/model' -> (provider instance, model name)."""
    provider, model = parse_spec(spec)
    return make_provider(provider, settings), model


def _by_rank(role: str) -> list[type[ProviderPlugin]]:
    """The providers with a default model for `role`, in their order of preference."""
    found = [cls for cls in registered().values() if role in cls.default_models]
    return sorted(found, key=lambda cls: (cls.default_rank.get(role, 1000), cls.name))


def default_spec(role: str) -> str | None:
    """The spec a role uses when none is configured: the first provider (by `default_rank`)
    whose key is set; None when no provider with a default model is enabled."""
    return next((f"{cls.name}/{cls.default_models[role]}" for cls in _by_rank(role) if not cls.missing_env()), None)


def key_hints() -> list[str]:
    """The key variables that would give askdesk a model on their own, in order of preference."""
    return list(dict.fromkeys(cls.key_env for cls in _by_rank("agent") if cls.key_env))


def enabled_by(provider_name: str) -> str:
    """The variable that enables a provider, for the "no LLM" notice (the API key, or a server's URL)."""
    try:
        return provider_class(provider_name).enabled_by()
    except ProviderNotConfigured:
        return "the provider's API key"


def no_model_hint() -> str:
    """What to set when no model is configured: a default spec and its key, then the other keys."""
    first = _by_rank("agent")[:1]
    if not first:
        return "ASKDESK_AGENT_MODEL=provider/model and the provider's key"
    spec = f"{first[0].name}/{first[0].default_models['agent']}"
    others = [key for key in key_hints() if key != first[0].key_env]
    return f"ASKDESK_AGENT_MODEL={spec} and {first[0].key_env}" + (f" (or {' / '.join(others)})" if others else "")


def provider_table(classes: Iterable[type[ProviderPlugin]]) -> str:
    """The providers as a Markdown table, from their classes (docs/agent.md; `python -m
    agent.providers.factory` prints askdesk's own)."""
    def code(names: Iterable[str]) -> str:
        return " or ".join(f"`{n}`" for n in names if n) or "—"

    rows = ["| Provider | Spec | Key | Base URL | Default model: agent / router |", "|---|---|---|---|---|"]
    for cls in sorted(classes, key=lambda c: (c.default_rank.get("agent", 1000), c.name)):
        key = code([cls.key_env, *cls.key_env_alternatives]) + ("" if cls.key_required or not cls.key_env else
                                                               " (if the server wants one)")
        defaults = " / ".join(f"`{cls.default_models[r]}`" if r in cls.default_models else "—" for r in ROLES)
        rows.append(f"| {cls.label or cls.name} | `{cls.name}/<model>` | {key} | {code([cls.base_url_env])} | "
                    f"{defaults if cls.default_models else '—'} |")
    return "\n".join(rows)


def builtin_providers() -> list[type[ProviderPlugin]]:
    """askdesk's own providers (the plug-ins of its own package), whatever else is installed."""
    registrar = _given[-1] if _given else plugins()
    own = {x.name for x in registrar.loaded if x.kind == "provider" and x.package == "askdesk"}
    return [cls for name, cls in registrar.providers.items() if name in own]


def configured_status(specs: Iterable[str | None], settings: Settings | None = None) -> list[str]:
    """One message per spec that cannot run (missing key, bad spec); [] when all can.
    No spec at all yields the message telling how to enable an LLM."""
    specs = [s for s in specs if s]
    if not specs:
        return [f"No LLM is configured: set {no_model_hint()}"]
    problems = []
    for spec in specs:
        try:
            resolve(spec, settings)
        except ProviderNotConfigured as exc:
            problems.append(f"{spec}: {exc}")
    return problems


if __name__ == "__main__":
    print(provider_table(builtin_providers()))
