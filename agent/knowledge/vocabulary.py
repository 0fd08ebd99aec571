"""What a knowledge base says about itself: its index terms and how many chunks hold each.

Read from the collection (titles, headings and text of every chunk, tokenised exactly as BM25
indexes them), once per process and collection, like a registry's places. The
off-topic check uses it to tell a message written in the documents' own words ("PEIMS #s?",
"probation B?") from one that merely shares a few common words with them.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from agent.knowledge import versions
from agent.knowledge.sparse import tokens

TTL_SECONDS = 300.0
MAX_POINTS = 50_000  # a larger knowledge base is sampled: enough to know its words
# Codes and acronyms as written in a message: two capitals ("TRS", "PSoC", "KinderConnect") or
# letters mixed with digits ("BCY25", "TX3C"); a KB term written like this is the domain's own.
_CODE = re.compile(r"(?<![\w])(?=[\w-]*[A-Z][\w-]*[A-Z]|[\w-]*[A-Za-z][\w-]*\d|[\w-]*\d[\w-]*[A-Za-z])[\w-]{3,}(?![\w])")


@dataclass
class Vocabulary:
    df: Counter = field(default_factory=Counter)  # term -> chunks containing it
    chunks: int = 0
    langs: Counter = field(default_factory=Counter)  # language -> chunks written in it
    headings: set = field(default_factory=set)  # terms of the documents' titles and headings
    titles: Counter = field(default_factory=Counter)  # document title -> chunks (what the KB is about)

    def languages(self, min_share: float = 0.10) -> set[str]:
        """Languages most of the documents are written in: a question in another language (or in
        one a few documents use) mostly finds its answer across languages."""
        return {lang for lang, n in self.langs.items() if self.chunks and n / self.chunks >= min_share}

    def knows(self, term: str) -> bool:
        return self.df.get(term, 0) > 0

    def coverage(self, text: str) -> float | None:
        """Share of the message's words (not bare numbers) that occur in the knowledge base."""
        terms = {t for t in tokens(text) if not t.replace(",", "").replace(".", "").isdigit()}
        if not terms or not self.chunks:
            return None
        return sum(1 for t in terms if self.knows(t)) / len(terms)

    def in_headings(self, text: str) -> bool:
        """Every word of the message (not bare numbers) is a word of the documents' titles or
        headings — what the documents say they are about ("who is eligible?", "teen parents?")."""
        terms = {t for t in tokens(text) if not t.replace(",", "").replace(".", "").isdigit()}
        # identifiers the documents do not know (a case or reference number) are not vocabulary
        for word in _CODE.findall(text):
            terms -= {t for t in tokens(word) if not self.knows(t)}
        return bool(terms) and terms <= self.headings

    def codes(self, text: str) -> list[str]:
        """Codes/acronyms of the message that the knowledge base uses too."""
        found = []
        for word in _CODE.findall(text):
            if any(self.knows(t) for t in tokens(word)):
                found.append(word)
        return found


async def _load(runtime, collection: str) -> Vocabulary:
    vocab = Vocabulary()
    metadata = await runtime.store.collection_metadata(collection)
    if metadata is not None:
        offset = None
        flt = versions.visible(None, metadata)  # unfinished or replaced versions are not the documents
        while vocab.chunks < MAX_POINTS:
            points, offset = await runtime.store.scroll(
                collection, scroll_filter=flt, limit=1024, offset=offset,
                with_payload=["title", "section", "text", "lang"], with_vectors=False,
            )
            for p in points:
                payload = p.payload or {}
                text = " ".join(str(payload.get(k) or "") for k in ("title", "section", "text"))
                vocab.df.update(set(tokens(text, payload.get("lang") or None)))
                heads = f"{payload.get('title') or ''} {payload.get('section') or ''}"
                vocab.headings.update(tokens(heads, payload.get("lang") or None))
                vocab.langs[payload.get("lang") or "und"] += 1
                if payload.get("title"):
                    vocab.titles[str(payload["title"]).strip()] += 1
                vocab.chunks += 1
            if offset is None:
                break
    runtime.caches[("vocabulary", collection)] = (time.monotonic(), vocab)
    return vocab


async def vocabulary(runtime, collection: str | None = None) -> Vocabulary:
    """The collection's vocabulary (cached; re-read after TTL_SECONDS or an ingest)."""
    collection = collection or runtime.settings.collection
    hit = runtime.caches.get(("vocabulary", collection))
    if hit is not None and time.monotonic() - hit[0] < TTL_SECONDS:
        return hit[1]
    return await _load(runtime, collection)


def forget_vocabulary(runtime, collection: str) -> None:
    runtime.caches.pop(("vocabulary", collection), None)
