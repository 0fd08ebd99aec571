"""Vietnamese typed without its marks, written back with them from the collection's own pages.

Staff on a phone type "giay phep sua nha"; the index folds marks away and finds it, but the
embedder reads it as a language of its own, near no page (agent/knowledge/language.py,
`typed_without_marks`). Written back as "giấy phép sửa nhà" it reads as Vietnamese. A general
restorer does not know an organisation's words (pyvi made "nghi phep nam" "lie down": docs/
understanding.md), but the collection's own Vietnamese pages do: each syllable's marked forms and
which one follows which are counted in them, and the likeliest sequence (Viterbi over syllable
pairs) is searched. A syllable the pages never use, or a word with a capital (a name, a code), is
left as typed.

Only where Vietnamese pages come from language_centers.MIN_DOCUMENTS documents or more, so that
the search ranks them centered: one page's counts are thin, and its restored questions are drawn
to that page (kept university IT: the questions answered by an English page lost their first
place). Counted once per content version, from up to SAMPLE passages.
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import agent.store.models as models
from agent.accents import fold
from agent.knowledge import versions
from agent.knowledge.calibration import CONTENT_KEY

if TYPE_CHECKING:
    from agent.runtime import Runtime

LANG = "vi"
SAMPLE = 2_000  # passages read
PAGE = 256
CACHE = "vietnamese marks"  # runtime.caches key: (content version, Spelling)
_WORD = re.compile(r"\w+")


@dataclass
class Spelling:
    """Syllables as the pages write them: by their unmarked form, and in pairs."""

    forms: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))  # "giay" -> {"giấy": 40}
    pairs: Counter = field(default_factory=Counter)  # ("giấy", "phép") -> 38

    def add(self, text: str) -> None:
        for line in text.split("\n"):
            words = [w.lower() for w in _WORD.findall(line)]
            for word in words:
                self.forms[fold(word)][word] += 1
            self.pairs.update(zip(words, words[1:]))

    def restore(self, text: str) -> str:
        """`text` with each syllable the pages use in its likeliest marked form."""
        found = list(_WORD.finditer(text))
        options = [self._options(m.group()) for m in found]
        if not any(len(o) > 1 or o[0] != m.group() for o, m in zip(options, found)):
            return text
        # Viterbi: a form's chance after the previous one is its pair count, smoothed by how often
        # the pages write this syllable that way
        best: dict[str, tuple[float, list[str]]] = {}
        for i, forms in enumerate(options):
            written = sum(self._count(f) for f in forms) + 1
            followed = {before: sum(self.pairs[(before, f)] for f in forms) + 1 for before in best}
            step: dict[str, tuple[float, list[str]]] = {}
            for form in forms:
                alone = (self._count(form) + 0.1) / written
                if not best:
                    step[form] = (math.log(alone), [form])
                    continue
                step[form] = max((score + math.log((self.pairs[(before, form)] + alone) / followed[before]), path + [form])
                                 for before, (score, path) in best.items())
            best = step
        chosen = max(best.values())[1]
        out, last = [], 0
        for match, form in zip(found, chosen):
            out += [text[last:match.start()], form]
            last = match.end()
        return "".join(out) + text[last:]

    def _options(self, word: str) -> list[str]:
        if word != word.lower() or word.isdigit():
            return [word]  # a name or code ("Salem", "NetID"), a figure: as typed
        return list(self.forms.get(fold(word), ())) or [word]

    def _count(self, form: str) -> int:
        return self.forms.get(fold(form), Counter())[form]


async def _counted(runtime: "Runtime", name: str, metadata: dict[str, Any]) -> Spelling:
    spelling = Spelling()
    only = models.Filter(must=[models.FieldCondition(key="lang", match=models.MatchValue(value=LANG))])
    visible = versions.visible(None, metadata)
    flt = only if visible is None else models.Filter(must=[visible, only])
    offset, read = None, 0
    while read < SAMPLE:
        points, offset = await runtime.store.scroll(name, scroll_filter=flt, limit=PAGE, offset=offset,
                                                    with_payload=["text"], with_vectors=False)
        for point in points:
            spelling.add(str((point.payload or {}).get("text", "")))
        read += len(points)
        if offset is None:
            break
    return spelling


async def with_marks(runtime: "Runtime", name: str, query: str, metadata: dict[str, Any]) -> str:
    """`query` (Vietnamese typed without its marks) with them written back from the collection's
    Vietnamese pages; as typed when they cannot say."""
    version = metadata.get(CONTENT_KEY)
    cached = runtime.caches.get((CACHE, name))
    if cached is None or cached[0] != version:
        cached = (version, await _counted(runtime, name, metadata))
        runtime.caches[(CACHE, name)] = cached
    return cached[1].restore(query)
