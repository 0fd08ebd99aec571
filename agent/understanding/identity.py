"""What askdesk says it is about: the words for the models' prompts, refusals and greetings.

No domain lives in code. In order: the settings (`ASKDESK_ASSISTANT_DOMAIN`,
`ASKDESK_ASSISTANT_CAPABILITIES`), the deployment's domain file (`description`,
`capabilities`, `examples`; the Texas demo's says "Texas child-care assistance…"), else words
derived from the knowledge base itself: "the organisation's documents" and its biggest
documents' titles. Derived once per collection (the vocabulary scroll is cached anyway).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from agent.understanding.domain import Domain
from agent.knowledge.vocabulary import vocabulary

log = logging.getLogger(__name__)

GENERIC = "the organisation's documents"
TITLES_SHOWN = 6  # titles named in the derived domain the models read: enough to say what the documents cover
TITLES_SAID = 3  # titles named in the derived words people read (refusals, greetings): one sentence
TITLE_CHARS = 120  # ... and no more titles once they fill this many characters
SUGGESTED = 3  # questions derived from the biggest documents' titles when none are configured


@dataclass(frozen=True)
class Identity:
    domain: str  # what the documents are about (router and agent prompts)
    capabilities: str  # what askdesk helps with (refusal, greeting, router prompt)
    examples: str = ""  # example requests for refusals and greetings ("" = none)
    prompts: tuple[str, ...] = ()  # questions offered to try (suggested prompts)


def derive(titles: list[str], limit: int = TITLES_SAID, chars: int = TITLE_CHARS) -> str:
    """'the organisation's documents, such as “A”, “B” and “C”' from the knowledge base's biggest
    documents: at most `limit` titles, and no more once they fill `chars` (the first is always
    named), each quoted since titles carry their own commas and colons. A refusal that listed
    six long titles in parentheses read as one run-on sentence."""
    named: list[str] = []
    for title in (" ".join(t.split()) for t in titles):
        if not title or title in named:
            continue
        if len(named) >= limit or (named and sum(map(len, named)) + len(title) > chars):
            break
        named.append(title)
    if not named:
        return GENERIC
    quoted = [f"“{t}”" for t in named]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} and {quoted[-1]}"
    return f"{GENERIC}, such as {listed}"


class Identities:
    """The identity per knowledge collection: configured words, else derived ones."""

    def __init__(self, settings, domain: Domain, runtime, prompts=None) -> None:
        self.runtime = runtime
        self.domain = settings.assistant_domain or domain.description
        self.capabilities = settings.assistant_capabilities or domain.capabilities
        self.examples = domain.examples or ""
        self.suggested = tuple(domain.suggested_prompts)
        self.prompts = prompts  # renders questions about the biggest documents when none are configured
        self._derived: dict[str | None, Identity] = {}

    @property
    def configured(self) -> bool:
        return bool(self.domain and self.capabilities and self.suggested)

    def get(self, collection: str | None) -> Identity:
        """The identity (derived words once `load` ran for the collection, else the generic ones)."""
        if collection in self._derived:
            return self._derived[collection]
        words = self.domain or self.capabilities or GENERIC
        return Identity(self.domain or words, self.capabilities or words, self.examples, self.suggested)

    async def load(self, collection: str | None) -> Identity:
        """`get`, after deriving the missing words from the collection's titles (once)."""
        if self.configured or collection in self._derived:
            return self.get(collection)
        try:
            vocab = await vocabulary(self.runtime, collection)
            titles = [title for title, _ in vocab.titles.most_common(TITLES_SHOWN)]
        except Exception as exc:  # the knowledge base is down: the turn reports it, not this
            log.warning("could not read the knowledge base's titles: %s", type(exc).__name__)
            return self.get(collection)
        if not titles:
            return self.get(collection)
        # the models read more titles than people do: a refusal or greeting names three at most
        domain = self.domain or self.capabilities or derive(titles, TITLES_SHOWN, chars=1000)
        capabilities = self.capabilities or self.domain or derive(titles, TITLES_SAID)
        suggested = self.suggested or tuple(
            self.prompts.render("suggested_question", title=title) for title in titles[:SUGGESTED]) if self.prompts else ()
        self._derived[collection] = Identity(domain, capabilities, self.examples, self.suggested or suggested)
        return self._derived[collection]
