"""One parse in progress: the text not yet understood, the argument values found, the notes.

A recognised phrase is replaced by `SEP`, so phrases never join across it ("in Austin | open").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable

from agent.prompts import PromptSet, default_prompts

SEP = " | "  # what a recognised phrase leaves behind: stops phrases from joining across it


def normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).lower()
    text = text.replace("’", "'").replace("“", '"').replace("”", '"')
    text = re.sub(r"\bw/o\b", " without ", text)
    text = re.sub(r"\bw/\s*", " with ", text)
    text = text.replace("&", " and ")
    return text


def word_re(phrase: str) -> str:
    """`phrase` (a regex) as whole words: not inside a longer word or hyphenation."""
    return r"(?<![\w-])(?:" + phrase + r")(?![\w-])"


def span_of_words(rest: str, n: int) -> int:
    """Characters of `rest` covering its first n words (and the space before them)."""
    count = 0
    for m in re.finditer(r"[a-z0-9][a-z0-9.'-]*", rest):
        count += 1
        if count == n:
            return m.end()
    return len(rest)


@dataclass
class Parse:
    text: str
    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    prompts: PromptSet | None = None  # the notes' sentences (None: the packaged prompts)

    def read_as(self, read: str, value: str) -> None:
        """Note how a piece of the text was read ("read 'san antono' as San Antonio"), said in the
        language being spoken."""
        self.notes.append((self.prompts or default_prompts()).text("registry_read_as", text=read, value=value))

    def take(self, pattern: re.Pattern, handle: Callable[[re.Match], Any]) -> None:
        """Replace each match by SEP (the handler read it), by what the handler returns when it
        keeps part of the match (a str), or leave it when the handler returns False."""

        def repl(m: re.Match) -> str:
            out = handle(m)
            if isinstance(out, str):
                return out
            return SEP if out is not False else m.group(0)

        self.text = pattern.sub(repl, self.text)
