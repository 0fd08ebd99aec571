"""What askdesk says it is about: the words for the models' prompts, refusals and greetings.

No domain lives in code. In order: the settings (`ASKDESK_ASSISTANT_DOMAIN`,
`ASKDESK_ASSISTANT_CAPABILITIES`, per language `ASKDESK_ASSISTANT_CAPABILITIES_ES`/`_VI`), the
deployment's domain file (`description`, `capabilities`, `examples`; the Texas demo's says
"Texas child-care assistance…"), else words derived from the knowledge base itself: the
`capabilities_documents` message ("the organisation's documents, such as “A” and “B”") naming
its biggest documents, those written in the asker's language first. Derived once per collection
(the vocabulary scroll is cached anyway).

The capabilities complete "I can only help with questions about …" in every language, so a
configured value must be a noun phrase: `check_capabilities` refuses a sentence, a verb phrase
or a long paragraph at start-up, naming the variable.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from agent.knowledge.language import detect_language, message_language
from agent.knowledge.vocabulary import vocabulary
from agent.prompts import ENGLISH, LANGUAGE, PromptSet, default_prompts, speaking
from agent.understanding.domain import Domain
from agent.yamlio import safe_load

log = logging.getLogger(__name__)

TITLES_SHOWN = 6  # titles named in the derived domain the models read: enough to say what the documents cover
TITLES_SAID = 3  # titles named in the derived words people read (refusals, greetings): one sentence
TITLE_CHARS = 120  # ... and no more titles once they fill this many characters
TITLES_READ = 60  # the biggest documents' titles looked at for those written in the asker's language
SUGGESTED = 3  # questions derived from the biggest documents' titles when none are configured
CAPABILITIES_CHARS = 200  # a configured noun phrase longer than this is a paragraph, not a phrase
ENV = "ASKDESK_ASSISTANT_CAPABILITIES"

_SENTENCE_BREAK = re.compile(r"[.!?…]\s+\S|\n")
_END = ".!?…;:,"


class CapabilitiesError(ValueError):
    """A configured capabilities value does not fit the refusal's sentence (a start-up error)."""


@lru_cache(maxsize=1)
def _not_first() -> dict[str, tuple[str, ...]]:
    data = safe_load(resources.files("agent.data").joinpath("noun_phrase.yaml").read_text("utf-8"))
    return {lang: tuple(str(w).lower() for w in words) for lang, words in data["not_starting_with"].items()}


def check_capabilities(value: str | None, env: str = ENV, lang: str = ENGLISH) -> str | None:
    """`value` as configured (whitespace joined), or CapabilitiesError naming `env` when it is not a
    noun phrase that completes "I can only help with questions about …"."""
    if value is None:
        return None
    phrase = " ".join(value.split())
    why = None
    if not phrase:
        why = "it is empty"
    elif len(phrase) > CAPABILITIES_CHARS:
        why = f"it is {len(phrase)} characters long (at most {CAPABILITIES_CHARS}: one phrase, not a paragraph)"
    elif start := next((w for w in _not_first().get(lang, ()) if re.match(re.escape(w) + r"\b", phrase.lower())), None):
        why = f"it starts with {phrase[:len(start)]!r}, not with what the questions are about"
    elif _SENTENCE_BREAK.search(value.strip()):
        why = "it holds more than one sentence"
    elif phrase[-1] in _END:
        why = f"it ends with {phrase[-1]!r} (the sentence around it adds its own punctuation)"
    if why:
        raise CapabilitiesError(
            f"{env} must be a noun phrase that completes “I can only help with questions about …”, such as "
            f"“pay, leave and ward procedures”; {why}: {value.strip()[:80]!r}")
    return phrase


@dataclass(frozen=True)
class Identity:
    domain: str  # what the documents are about (router and agent prompts)
    capabilities: str  # what askdesk helps with (the router prompt; refusals and greetings in English)
    examples: str = ""  # example requests for refusals and greetings ("" = none)
    prompts: tuple[str, ...] = ()  # questions offered to try (suggested prompts)
    said: Mapping[str, str] = field(default_factory=dict)  # language -> capabilities people read in it

    def capabilities_in(self, lang: str | None = None) -> str:
        """What askdesk helps with, in `lang` (default: the language being spoken)."""
        return self.said.get(lang or LANGUAGE.get(), self.capabilities)

    def examples_in(self, lang: str | None = None) -> str:
        """The example requests when they are written in `lang` (a Spanish refusal suggests no
        English questions)."""
        lang = lang or LANGUAGE.get()
        return self.examples if self.examples and detect_language(self.examples) == lang else ""


def in_language(titles: Iterable[str], lang: str) -> list[str]:
    """The titles clearly written in `lang` (English: also those too short to tell)."""
    return [t for t in titles if message_language(t) in ((lang, None) if lang == ENGLISH else (lang,))]


def derive(titles: list[str], limit: int = TITLES_SAID, chars: int = TITLE_CHARS,
           prompts: PromptSet | None = None) -> str:
    """'the organisation's documents, such as “A”, “B” and “C”' (the `capabilities_documents`
    message, in the language being spoken) from the knowledge base's biggest documents: at most
    `limit` titles, and no more once they fill `chars` (the first is always named), each quoted
    since titles carry their own commas and colons. A refusal that listed six long titles in
    parentheses read as one run-on sentence."""
    named: list[str] = []
    for title in (" ".join(t.split()) for t in titles):
        if not title or title in named:
            continue
        if len(named) >= limit or (named and sum(map(len, named)) + len(title) > chars):
            break
        named.append(title)
    return (prompts or default_prompts()).text("capabilities_documents", titles=named)


with speaking(ENGLISH):
    GENERIC = derive([])  # "the organisation's documents"


class Identities:
    """The identity per knowledge collection: configured words, else derived ones."""

    def __init__(self, settings, domain: Domain, runtime, prompts: PromptSet | None = None) -> None:
        self.runtime = runtime
        self.prompts = prompts  # renders questions about the biggest documents when none are configured
        self.domain = settings.assistant_domain or domain.description
        self.capabilities = check_capabilities(settings.assistant_capabilities) or domain.capabilities
        self.examples = domain.examples or ""
        self.suggested = tuple(domain.suggested_prompts)
        # per language (ASKDESK_ASSISTANT_CAPABILITIES_ES, ...): checked at start-up like the English one
        self.said: dict[str, str] = {ENGLISH: self.capabilities} if self.capabilities else {}
        for lang in (prompts or default_prompts()).languages:
            attr = f"assistant_capabilities_{lang}"
            if lang != ENGLISH and (value := getattr(settings, attr, None)):
                self.said[lang] = check_capabilities(value, f"{ENV}_{lang.upper()}", lang) or ""
        self._derived: dict[str | None, Identity] = {}

    @property
    def languages(self) -> tuple[str, ...]:
        return (self.prompts or default_prompts()).languages

    @property
    def configured(self) -> bool:
        return bool(self.domain and self.suggested and all(lang in self.said for lang in self.languages))

    def get(self, collection: str | None) -> Identity:
        """The identity (derived words once `load` ran for the collection, else the generic ones)."""
        if collection in self._derived:
            return self._derived[collection]
        words = self.domain or self.capabilities or GENERIC
        capabilities = self.capabilities or words
        said = {ENGLISH: capabilities}
        for lang in self.languages:
            if lang in self.said:
                said[lang] = self.said[lang]
            elif lang != ENGLISH:
                with speaking(lang):
                    said[lang] = derive([], prompts=self.prompts)
        return Identity(self.domain or words, capabilities, self.examples, self.suggested, said)

    async def load(self, collection: str | None) -> Identity:
        """`get`, after deriving the missing words from the collection's titles (once)."""
        if self.configured or collection in self._derived:
            return self.get(collection)
        try:
            vocab = await vocabulary(self.runtime, collection)
            biggest = [title for title, _ in vocab.titles.most_common(TITLES_READ)]
        except Exception as exc:  # the knowledge base is down: the turn reports it, not this
            log.warning("could not read the knowledge base's titles: %s", type(exc).__name__)
            return self.get(collection)
        if not biggest:
            return self.get(collection)
        titles = biggest[:TITLES_SHOWN]
        with speaking(ENGLISH):  # the models' words and the suggested questions, whatever turn loads them
            # the models read more titles than people do: a refusal or greeting names three at most
            domain = self.domain or self.capabilities or derive(titles, TITLES_SHOWN, chars=1000, prompts=self.prompts)
            suggested = self.suggested or tuple(
                self.prompts.render("suggested_question", title=title) for title in titles[:SUGGESTED]) if self.prompts else ()
        said: dict[str, str] = {}
        for lang in self.languages:
            if lang in self.said:
                said[lang] = self.said[lang]
            elif lang == ENGLISH and self.domain:
                said[lang] = self.domain
            else:  # the biggest documents written in that language, else the biggest of all
                with speaking(lang):
                    said[lang] = derive(in_language(biggest, lang) or titles, TITLES_SAID, prompts=self.prompts)
        self._derived[collection] = Identity(domain, said[ENGLISH], self.examples, self.suggested or suggested, said)
        return self._derived[collection]
