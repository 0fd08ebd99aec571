"""What a knowledge base says about itself: its index terms and how many chunks hold each.

Read from the statistics an ingest stored with the collection (agent/knowledge/statistics.py),
looked up a term at a time, so opening them costs the same at any size; a later ingest by
another process is noticed by a content-version check every CHECK_SECONDS and swapped in by a
background task while questions keep the previous vocabulary: the statistics that process
saved on this host, or, from another host of a shared server, its published changes applied to
this host's (agent/knowledge/statistics_log.py); the task rebuilds them by a scan only when
neither exists (a collection ingested by an older build). The off-topic check uses it to tell a
message written in the documents' own words ("PEIMS #s?", "probation B?") from one that merely
shares a few common words with them.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections import Counter
from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from agent.knowledge import statistics, statistics_log
from agent.knowledge.sparse import tokens

log = logging.getLogger(__name__)

CHECK_SECONDS = 5.0  # how often a process compares its vocabulary with the collection's version
# how long a refresh waits for the ingesting process to save the statistics of the version it
# wrote (it writes the version first) before it rebuilds them by a scan
SAVED_WAIT_SECONDS = 10.0
SAVED_POLL_SECONDS = 0.1
# A language at least this share of the chunks are written in is one the documents are mainly
# written in; a question in any other is mostly answered by a page of another language (the
# off-topic gate measures it across languages; search ranks its dense side centered).
MAIN_SHARE = 0.5
# Codes and acronyms as written in a message: two capitals ("TRS", "PSoC", "KinderConnect") or
# letters mixed with digits ("BCY25", "TX3C"); a KB term written like this is the domain's own.
_CODE = re.compile(r"(?<![\w])(?=[\w-]*[A-Z][\w-]*[A-Z]|[\w-]*[A-Za-z][\w-]*\d|[\w-]*\d[\w-]*[A-Za-z])[\w-]{3,}(?![\w])")


@dataclass
class Vocabulary:
    """A Counter or a set in tests; the saved statistics' `Counts`, read a term at a time, in use."""

    df: Mapping[str, int] = field(default_factory=Counter)  # term -> chunks containing it
    chunks: int = 0
    langs: Counter = field(default_factory=Counter)  # language -> chunks written in it
    headings: Container[str] = field(default_factory=set)  # terms of the documents' titles and headings
    titles: Any = field(default_factory=Counter)  # document title -> chunks (`most_common`: what the KB is about)

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
        return bool(terms) and all(t in self.headings for t in terms)

    def codes(self, text: str) -> list[str]:
        """Codes/acronyms of the message that the knowledge base uses too."""
        found = []
        for word in _CODE.findall(text):
            if any(self.knows(t) for t in tokens(word)):
                found.append(word)
        return found

    @classmethod
    def of(cls, saved: statistics.Stored | None) -> "Vocabulary":
        if saved is None:  # no collection yet
            return cls()
        return cls(df=saved.df, chunks=saved.chunks, langs=saved.langs, headings=saved.headings, titles=saved.titles)


@dataclass
class _Loaded:
    vocabulary: Vocabulary
    version: str | None  # the collection content it describes
    checked: float
    refresh: "asyncio.Task | None" = None


async def _version(runtime, collection: str) -> str | None:
    metadata = await runtime.store.collection_metadata(collection)
    return (metadata or {}).get(statistics.CONTENT_KEY)


async def _first(runtime, collection: str) -> _Loaded:
    """This process's first look: the saved statistics (current or not: a stale set is used
    while the current one is read in the background); a collection with none yet (ingested by
    an older build) is scanned once and its statistics saved."""
    version = await _version(runtime, collection)
    saved = statistics.open_saved(runtime, collection)
    if saved is None:  # a new host of a shared store reads them from its log, else one scan
        if not await statistics_log.catch_up(runtime, collection, version):
            await statistics_log.rebuild(runtime, collection)
        saved = statistics.open_saved(runtime, collection)
    described = saved.content_version if saved is not None else version
    loaded = _Loaded(Vocabulary.of(saved), described, time.monotonic())
    if described != version:
        loaded.refresh = runtime.spawn(_refresh(runtime, collection, loaded, version))
    return loaded


async def _saved(runtime, collection: str, version: str | None) -> statistics.Stored | None:
    """The saved statistics of `version` or of a later one the collection has now, waiting up to
    SAVED_WAIT_SECONDS for the process that wrote the version to save them; None if it does not."""
    deadline = time.monotonic() + SAVED_WAIT_SECONDS
    while True:
        saved = statistics.open_saved(runtime, collection)
        current = await _version(runtime, collection)
        if saved is not None and saved.content_version in (version, current):
            return saved
        if await statistics_log.catch_up(runtime, collection, current):  # another host's ingest
            return statistics.open_saved(runtime, collection)
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(min(SAVED_POLL_SECONDS, SAVED_WAIT_SECONDS))


async def _refresh(runtime, collection: str, loaded: _Loaded, version: str | None) -> None:
    """Open (or, when no process saved them, build) the statistics of `version`, then swap."""
    try:
        saved = await _saved(runtime, collection, version)
        if saved is None:
            await statistics_log.rebuild(runtime, collection)
            saved = statistics.open_saved(runtime, collection)
        if saved is not None:
            loaded.vocabulary, loaded.version = Vocabulary.of(saved), saved.content_version
    except Exception as exc:  # the store is down: keep the previous vocabulary, try again later
        log.warning("knowledge-base statistics not refreshed: %s", type(exc).__name__)


async def vocabulary(runtime, collection: str | None = None) -> Vocabulary:
    """The collection's vocabulary: loaded once, then kept current in the background."""
    collection = collection or runtime.settings.collection
    key = ("vocabulary", collection)
    loaded: _Loaded | None = runtime.caches.get(key)
    if loaded is None:
        loaded = runtime.caches[key] = await _first(runtime, collection)
        return loaded.vocabulary
    now = time.monotonic()
    if now - loaded.checked >= CHECK_SECONDS and (loaded.refresh is None or loaded.refresh.done()):
        loaded.checked = now
        version = await _version(runtime, collection)
        if version != loaded.version:
            loaded.refresh = runtime.spawn(_refresh(runtime, collection, loaded, version))
    return loaded.vocabulary


def forget_vocabulary(runtime, collection: str) -> None:
    """This process just changed the collection (and saved its statistics): read them anew."""
    loaded = runtime.caches.pop(("vocabulary", collection), None)
    if loaded is not None and loaded.refresh is not None:
        loaded.refresh.cancel()
