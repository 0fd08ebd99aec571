"""A deployment's domain file: the words and examples that are specific to one organisation.

The code knows no domain. What the knowledge base says about itself (its vocabulary, titles,
headings) is read from the collection (agent/knowledge/vocabulary.py); this optional YAML
(`ASKDESK_DOMAIN_FILE`) adds what the documents cannot say: the words staff use that the
documents do not (other languages, slang) and deployment-specific requests to decline. (What
names a registry's records and its places' nicknames live in the registry's declaration:
docs/registries.md.) It also says, in words, what the documents are about
(`description`, `capabilities`, `examples`: see agent/understanding/identity.py). The Texas demo's lives in
examples/texas-childcare/.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agent.yamlio import safe_load


class Domain(BaseModel):
    """Parsed domain file (every field optional)."""

    model_config = ConfigDict(frozen=True)

    description: str | None = Field(None, description="What the documents are about, for the models' prompts.")
    capabilities: str | None = Field(None, description="What askdesk helps with, named in refusals and greetings.")
    examples: str | None = Field(None, description="Example requests suggested in refusals and greetings.")
    suggested_prompts: list[str] = Field(default_factory=list, description="Questions offered to try (Slack's "
                                         "messages tab, the Teams welcome, the non-interactive demo).")

    terms: list[str] = Field(default_factory=list, description="A message containing one is never refused without a model.")
    offtopic: list[str] = Field(default_factory=list, description="Extra examples of requests to decline.")


EMPTY = Domain()


@lru_cache(maxsize=8)
def _load(path: str, mtime: float) -> Domain:
    data = safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping (description, capabilities, examples, terms, ...)")
    return Domain(**{k: v for k, v in data.items() if k in Domain.model_fields and v})  # older keys are ignored


DATA_DIR_FILE = "domain.yaml"  # found in the data dir when ASKDESK_DOMAIN_FILE is not set


def domain_path(settings) -> Path | None:
    """ASKDESK_DOMAIN_FILE, else `domain.yaml` in the data dir (where `askdesk demo` puts the demo's)."""
    if settings.domain_file:
        return Path(settings.domain_file)
    found = Path(settings.data_dir) / DATA_DIR_FILE
    return found if found.is_file() else None


def load_domain(path: Path | str | None) -> Domain:
    """The domain file at `path` (re-read when it changes), or the empty domain."""
    if not path:
        return EMPTY
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"domain file {p} does not exist")
    return _load(str(p.resolve()), p.stat().st_mtime)
