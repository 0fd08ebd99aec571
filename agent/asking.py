"""How a message asks (agent/data/asking.yaml): about a rule, a rate or a procedure, or for
records. Shared by the understanding layer (a question for the documents or a registry search)
and each registry's cue (its record nouns fill the patterns' `{noun}`); no organisation's words.
"""

from __future__ import annotations

import re
from functools import cache
from importlib import resources

from pydantic import BaseModel, ConfigDict

from agent.accents import fold
from agent.yamlio import safe_load

ASKING_FILE = "asking.yaml"
NOUN = "{noun}"
LANGUAGES = ("en", "es", "vi")


class Rules(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    symbols: list[str] = []
    en: list[str] = []
    es: list[str] = []
    vi: list[str] = []
    modal: dict[str, list[str]] = {}  # language -> "can a…?" words: a rule only when no record is asked for


class Records(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    en: list[str] = []
    es: list[str] = []
    vi: list[str] = []


class Asking(BaseModel):
    """The file's two ways of asking, each per language."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rules: Rules
    records: Records

    def rules_re(self) -> re.Pattern[str]:
        """A rule, rate or procedure word as whole words, or a symbol anywhere (search the
        lower-cased, accent-folded message)."""
        words = _whole(p for lang in LANGUAGES for p in getattr(self.rules, lang))
        return re.compile("|".join([words, *(re.escape(s) for s in self.rules.symbols)]))

    def modal_re(self) -> re.Pattern[str] | None:
        """"can a daycare…?", "¿puede…?": a rule question unless it asks for records."""
        patterns = [p for lang in LANGUAGES for p in self.rules.modal.get(lang, [])]
        return re.compile(_whole(patterns)) if patterns else None

    def records_re(self, nouns: list[str] | None = None) -> re.Pattern[str] | None:
        """With `nouns` (a registry's record nouns): the requests for those records; without:
        the requests that name no record ("where can I find…"). None when there are none."""
        patterns = [p for lang in LANGUAGES for p in getattr(self.records, lang) if (NOUN in p) == bool(nouns)]
        if nouns:
            alts = "(?:" + "|".join(_phrase(n) for n in sorted({fold(n.lower()) for n in nouns}, key=len, reverse=True)) + ")"
            patterns = [p.replace(NOUN, alts) for p in patterns]
        return re.compile(_whole(patterns)) if patterns else None


def _phrase(noun: str) -> str:
    """A plain noun phrase as a regex: its spaces (and hyphens) match any run of spaces or a hyphen."""
    return r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", noun.strip()) if w)


def _whole(patterns) -> str:
    """One alternation of `patterns`, each matched as whole words; a space matches any run of them."""
    space = r"\s+"
    return r"(?<!\w)(?:" + "|".join("(?:" + p.replace(" ", space) + ")" for p in patterns) + r")(?!\w)"


@cache
def load_asking() -> Asking:
    text = resources.files("agent.data").joinpath(ASKING_FILE).read_text(encoding="utf-8")
    return Asking.model_validate(safe_load(text))


def folded(text: str) -> str:
    """The form the patterns are matched on: whitespace collapsed, accent-folded, lower-cased."""
    return fold(" ".join(text.split())).lower()
