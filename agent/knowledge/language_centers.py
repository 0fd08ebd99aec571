"""Each language's mean passage vector in one collection, so cross-language similarities compare.

A multilingual sentence vector carries a language component besides its meaning (Libovický et
al. 2020, "On the language neutrality of pre-trained multilingual representations"): a
Vietnamese question comes closer to any Vietnamese passage, and to some English passages, than
its meaning warrants. Subtracting each language's mean vector — the query's language mean from
the query, each passage's language mean from the passage — before the cosine takes that shared
part out. The other-language retriever (agent/knowledge/search.py) ranks and admits passages by this
centered cosine; the same-language ranking keeps the raw one.

The means are the collection's own: computed from its passage vectors, per `lang` payload, when
an ingest changed it (a sample per language: a mean needs no more), stored in the collection's
metadata stamped with its content version, and recomputed in the background when a search finds
them missing or stale (another host's ingest, an older build).

A language's mean is its language component only when it averages several documents: the mean
of one document is that document's topic, and centering on it would push the document away from
every question on its subject (measured: with one English page, on trees, a Spanish question
about trees ranked it third instead of first). So centering is used only in a collection where every
language has passages from MIN_DOCUMENTS documents; any other collection ranks the other languages
by raw similarity. A question in a language the collection does not hold (a Spanish
question to an English handbook) is centered on the mean of all passages: the part every text of
this collection shares.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import BaseModel, ValidationError

import agent.store.models as models
from agent.knowledge import versions
from agent.knowledge.calibration import CONTENT_KEY, unit
from agent.knowledge.store import DENSE

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

KEY = "language_centers"  # metadata key
SAMPLE = 5_000  # passages read per language (and for the mean of all)
MIN_DOCUMENTS = 2  # documents a language's passages must come from for a mean of its own
MIN_PASSAGES = 8  # and passages
PAGE = 512
CACHE = "language centers"  # runtime.caches key: (content version, parsed centers)


class LanguageCenters(BaseModel):
    """Mean unit passage vectors: per language, and of all passages (`overall`)."""

    content_version: str
    embedder: str
    overall: list[float]
    centers: dict[str, list[float]]
    counts: dict[str, int]  # passages each mean was taken over (a sample of a large language)
    documents: dict[str, int] = {}  # documents those passages came from

    def complete(self) -> bool:
        """Every language of the collection has a mean of its own."""
        return set(self.counts) <= set(self.centers)

    def arrays(self) -> tuple[np.ndarray, dict[str, np.ndarray]]:
        return (np.asarray(self.overall, dtype=np.float32),
                {lang: np.asarray(v, dtype=np.float32) for lang, v in self.centers.items()})


class Centering:
    """Centered cosines against one collection's language means."""

    def __init__(self, data: LanguageCenters) -> None:
        self.overall, self.by_lang = data.arrays()

    def center_of(self, lang: str) -> np.ndarray:
        return self.by_lang.get(lang, self.overall)  # "und" (a table of figures): the mean of all

    def query(self, vector: list[float], lang: str) -> np.ndarray:
        return unit(unit(np.asarray(vector, dtype=np.float32)) - self.center_of(lang))

    def similarities(self, query: np.ndarray, points: list[Any]) -> list[float | None]:
        """Each point's centered cosine to a centered `query` (None: returned without its vector)."""
        rows = [(i, p.vector[DENSE], str((p.payload or {}).get("lang", ""))) for i, p in enumerate(points)
                if isinstance(p.vector, dict) and DENSE in p.vector]
        out: list[float | None] = [None] * len(points)
        if rows:
            vectors = unit(np.asarray([v for _, v, _ in rows], dtype=np.float32))
            centered = unit(vectors - np.stack([self.center_of(lang) for _, _, lang in rows]))
            for (i, _, _), score in zip(rows, centered @ query):
                out[i] = float(score)
        return out


def current(runtime: "Runtime", name: str, metadata: dict[str, Any], embedder: str) -> Centering | None:
    """The collection's centering for its current content, or None: not every language has a
    mean of its own, or the means are missing or stale (then recomputed in the background, once
    per content version)."""
    version = metadata.get(CONTENT_KEY)
    cached = runtime.caches.get((CACHE, name))
    if cached is not None and cached[0] == version:
        return cached[1]
    try:
        stored = LanguageCenters.model_validate(metadata.get(KEY))
    except ValidationError:  # none yet, or written by another build
        stored = None
    if stored is None or stored.content_version != version or stored.embedder != embedder:
        if version and runtime.caches.get((CACHE + " refreshing", name)) != version:
            runtime.caches[(CACHE + " refreshing", name)] = version
            runtime.spawn(_refresh_quietly(runtime, name))
        return None
    centering = Centering(stored) if stored.complete() else None
    runtime.caches[(CACHE, name)] = (version, centering)
    return centering


async def _vectors(runtime: "Runtime", name: str, flt: models.Filter | None) -> tuple[np.ndarray, int]:
    """Up to SAMPLE unit passage vectors matching `flt`, and how many documents they come from."""
    vectors: list[list[float]] = []
    sources: set[str] = set()
    offset = None
    while len(vectors) < SAMPLE:
        points, offset = await runtime.store.scroll(name, scroll_filter=flt, limit=min(PAGE, SAMPLE - len(vectors)),
                                                    offset=offset, with_payload=["source"], with_vectors=[DENSE])
        for p in points:
            if isinstance(p.vector, dict) and DENSE in p.vector:
                vectors.append(p.vector[DENSE])  # type: ignore[arg-type]
                sources.add(str((p.payload or {}).get("source", "")))
        if offset is None:
            break
        await runtime.idle()  # questions first
    return unit(np.asarray(vectors, dtype=np.float32)), len(sources)


async def _languages(runtime: "Runtime", name: str, flt: models.Filter | None) -> set[str]:
    """The collection's languages: from its statistics (agent/knowledge/kb_languages.py), or, when
    this host has none, from its passages' `lang` payload."""
    from agent.knowledge import kb_languages

    held = kb_languages.held(runtime.settings, name)
    if held:
        return set(held)
    langs: set[str] = set()
    offset = None
    while True:
        points, offset = await runtime.store.scroll(name, scroll_filter=flt, limit=4 * PAGE, offset=offset,
                                                    with_payload=["lang"], with_vectors=False)
        langs.update(str((p.payload or {}).get("lang", "")) for p in points)
        if offset is None:
            return langs - {"", kb_languages.UNDETERMINED}


async def compute(runtime: "Runtime", name: str) -> LanguageCenters | None:
    """The collection's language means for its current content (None: no collection or no passages)."""
    metadata = await runtime.store.collection_metadata(name)
    if metadata is None:
        return None
    visible = versions.visible(None, metadata)
    everything, _ = await _vectors(runtime, name, visible)
    if not len(everything):
        return None
    centers: dict[str, list[float]] = {}
    counts: dict[str, int] = {}
    documents: dict[str, int] = {}
    for lang in sorted(await _languages(runtime, name, visible)):
        only = models.Filter(must=[models.FieldCondition(key="lang", match=models.MatchValue(value=lang))])
        vectors, docs = await _vectors(runtime, name, only if visible is None else models.Filter(must=[visible, only]))
        counts[lang], documents[lang] = len(vectors), docs
        if len(vectors) >= MIN_PASSAGES and docs >= MIN_DOCUMENTS:
            centers[lang] = [round(float(x), 6) for x in vectors.mean(axis=0)]
    return LanguageCenters(content_version=str(metadata.get(CONTENT_KEY) or ""),
                           embedder=str(metadata.get("embedder") or runtime.embedder().name),
                           overall=[round(float(x), 6) for x in everything.mean(axis=0)], centers=centers,
                           counts=counts, documents=documents)


async def refresh(runtime: "Runtime", name: str) -> LanguageCenters | None:
    """Compute and store the collection's language means (an ingest that changed it calls this)."""
    centers = await compute(runtime, name)
    if centers is not None:
        await runtime.store.update_metadata(name, {KEY: centers.model_dump()})
        runtime.caches.pop((CACHE, name), None)
        log.info("language centers of %s: %s", name, centers.counts)
    return centers


async def ready(runtime: "Runtime", name: str) -> None:
    """The collection's means stored for its current content (start-up: the first question then
    searches centered, instead of the means being measured behind it)."""
    metadata = await runtime.store.collection_metadata(name)
    if metadata is None:
        return
    stored = metadata.get(KEY)
    version = metadata.get(CONTENT_KEY)
    if not isinstance(stored, dict) or stored.get("content_version") != version \
            or stored.get("embedder") != runtime.embedder().name:
        await _refresh_quietly(runtime, name)


async def _refresh_quietly(runtime: "Runtime", name: str) -> None:
    try:
        await refresh(runtime, name)
    except Exception as exc:  # the store went away: the next search asks again
        runtime.caches.pop((CACHE + " refreshing", name), None)
        log.warning("language centers of %s not stored: %s", name, type(exc).__name__)
