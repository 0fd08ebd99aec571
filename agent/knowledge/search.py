"""Hybrid search over a knowledge collection: dense + BM25 prefetch fused by RRF in Qdrant.

`Passage.dense_score` is the cosine similarity between the query and the passage even in
hybrid mode (RRF scores are ranks, not evidence strength); the formatted-context tool uses it
to flag weak evidence. Hybrid search also ranks in the closest passages of the other languages
(`with_other_languages`), and each passage carries its section as `context`
(agent/knowledge/sections.py, settings.section_chars).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

import agent.store.models as models
from agent.audience import VIEWING, narrowed
from agent.knowledge import versions
from agent.knowledge import calibration, language_centers, sections, vietnamese_marks
from agent.knowledge.language import detect_language, typed_without_marks
from agent.knowledge.vocabulary import MAIN_SHARE, vocabulary
from agent.knowledge.embedders import EmbedderError
from agent.knowledge.sparse import PREFETCH_MIN, RRF_K, RRF_WEIGHTS, RRF_WEIGHTS_EXACT, bm25_query, fusion  # noqa: F401
from agent.knowledge.store import (  # noqa: F401  (KnowledgeBaseUnavailable is part of this API)
    DENSE,
    SPARSE,
    EmbedderMismatch,
    KnowledgeBaseUnavailable,
    check_embedder,
    collection_metadata,
)

if TYPE_CHECKING:
    from agent.runtime import Runtime

SearchMode = Literal["hybrid", "dense", "sparse"]

# How dense and BM25 candidates are fused (PREFETCH_MIN, RRF_K, the weights, `fusion`) is kept
# with the BM25 side in agent/knowledge/sparse.py: the answerable calibration searches the same way.


# --- cross-language ---------------------------------------------------------------------------
# BM25 only ever matches words of the query's own language, and the multilingual dense model too
# ranks passages of the query's language first, so a question whose answer is only in a document
# of another language is drowned by same-language passages on nearby subjects (issue 34: 0.22-0.40
# recall@5 across languages, 1.00 within). Hybrid search therefore also asks the dense retriever
# for the best passages *not* in the query's language and adds each one's reciprocal rank to the
# fused ranking, but only for a passage whose similarity comes within CROSS_MARGIN of the best
# passage's: a weak other-language match must not push out a same-language answer. Tuned on
# examples/{city-permits,university-it}/eval/tune-34-crosslang.yaml (the centering below also on
# examples/*/eval/tune-36-crosslang.yaml) and checked on the same-language sets
# (docs/benchmarks.md, "Against a day-one build" and "Language centering").
CROSS_WEIGHT = 1.0  # the other-language list's weight (dense 1.0, BM25 0.4)
CROSS_LIMIT = 10  # other-language passages asked for
CROSS_MARGIN = 0.03  # how far below the best similarity an other-language passage may be and still count
# With the collection's language means (agent/knowledge/language_centers.py) the other-language
# candidates are ranked, and admitted, by centered cosine: the language component of the vectors
# no longer decides which English page a Vietnamese question finds. Raw similarity picks
# CROSS_CANDIDATES, the centered one keeps the best CROSS_LIMIT within CROSS_CENTERED_MARGIN of the
# best fused passage's centered cosine (centered cosines spread wider than raw ones: about 0.1-0.4).
CROSS_CANDIDATES = 40
CROSS_CENTERED_MARGIN = 0.06
# A question in a language few of the documents are written in (under vocabulary.MAIN_SHARE of
# the passages: a Spanish question to a mostly English handbook with a few Spanish pages) is
# mostly answered by a page of another language, yet raw similarity ranks its own few pages
# first, whatever they are about. For such a question the dense side of the hybrid ranks every
# language by centered cosine (`_centered_hybrid`): its own pages compete on meaning alone, BM25
# still rewards the words they share with it. Only where the language has a mean of its own
# (pages from language_centers.MIN_DOCUMENTS documents); a question in a language the documents
# do not hold has nothing drawing it and keeps the raw ranking. The raw ranking still counts, at
# MINORITY_RAW_WEIGHT of the centered one's weight: it keeps a question answered by a page of its
# own language first. Tuned on the kept organisations' Spanish and Vietnamese questions
# (tune-34/36/39-crosslang and every such question of their other sets; docs/knowledge.md,
# "Cross-language"): at 0.5, city permits' Vietnamese questions answered by an English page first
# 7 -> 23 of 38 (Spanish 17 -> 16 of 41); at 0 the Spanish ones answered by a Spanish page lost 4
# of 39 first places and the Texas demo's Spanish questions 4 of 61, at 0.5 one and none.
MINORITY_RAW_WEIGHT = 0.5


def other_languages(flt: models.Filter | None, lang: str) -> models.Filter:
    """`flt`, narrowed to passages not written in `lang`."""
    other = models.FieldCondition(key="lang", match=models.MatchValue(value=lang))
    return models.Filter(must=[flt] if flt is not None else None, must_not=[other])


def with_other_languages(fused: list["Passage"], others: list["Passage"], *, weight: float | None = None,
                         margin: float | None = None) -> list["Passage"]:
    """`fused` (scored by the engine's fusion) with each close enough passage of `others` (the
    other languages, best first, `score` = similarity) adding `weight / (RRF_K + rank)`;
    passages not in `fused` join with that alone. Unsorted: `ranked` orders the result."""
    weight = CROSS_WEIGHT if weight is None else weight
    margin = CROSS_MARGIN if margin is None else margin
    if not others or weight <= 0:
        return fused
    best = max((p.dense_score for p in fused if p.dense_score is not None), default=None)
    floor = max(best if best is not None else others[0].score, others[0].score) - margin
    by_key = {(p.source, p.chunk_index): p for p in fused}
    for rank, other in enumerate((p for p in others if p.score >= floor), start=1):
        bonus = weight / (RRF_K + rank)
        key = (other.source, other.chunk_index)
        kept = by_key.get(key)
        if kept is not None:
            by_key[key] = kept.model_copy(update={"score": kept.score + bonus})
        else:
            by_key[key] = other.model_copy(update={"score": bonus, "dense_score": other.score})
    return list(by_key.values())


class Passage(BaseModel):
    text: str
    source: str
    title: str = ""
    section: str = ""
    score: float
    chunk_index: int = 0
    lang: str = ""
    url: str | None = None
    dense_score: float | None = None
    # the whole section around `text` (or as much of it around the match as
    # settings.section_chars allows): what the model and the search-only answer are shown
    context: str | None = None
    # the first and last chunk of the document that `context` holds
    span: tuple[int, int] | None = None
    # the same similarity measured from the collection's calibrated centers (agent/knowledge/
    # calibration.py): the off-topic gate's evidence; None before the collection is calibrated
    centered_score: float | None = None
    # the best centered similarity among the top passages before other languages were ranked in
    # (`_keep_evidence`): what the gate's evidence was before a passage in another language took
    # a place in the results
    best_centered: float | None = None


class SearchFilters(BaseModel):
    source: str | None = None
    lang: str | None = None

    def to_qdrant(self) -> models.Filter | None:
        must = [
            models.FieldCondition(key=key, match=models.MatchValue(value=value))
            for key, value in (("source", self.source), ("lang", self.lang))
            if value
        ]
        return models.Filter(must=must) if must else None


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    na = math.sqrt(sum(x * x for x in a))
    nb = math.sqrt(sum(y * y for y in b))
    return dot / (na * nb) if na and nb else 0.0


async def _check_collection(runtime: "Runtime", name: str) -> dict[str, Any]:
    """The collection's metadata (which also lists the file versions search must not see)."""
    try:
        metadata = await collection_metadata(runtime, name)
    except Exception as exc:
        where = runtime.store.where
        raise KnowledgeBaseUnavailable(
            f"the vector store at {where} cannot be reached ({type(exc).__name__}: {exc})"
        ) from exc
    if metadata is None:
        raise KnowledgeBaseUnavailable(
            f"the knowledge base {name!r} is empty — run `askdesk ingest PATH` first"
        )
    if not metadata.get("embedder"):
        return metadata
    try:
        check_embedder(name, metadata, runtime.embedder())
    except EmbedderError as exc:
        raise KnowledgeBaseUnavailable(f"the configured embedder cannot be used: {exc}") from exc
    return metadata


def _passage(point: models.ScoredPoint, query_vector: list[float] | None) -> Passage:
    payload: dict[str, Any] = point.payload or {}
    dense_score = None
    vectors = point.vector if isinstance(point.vector, dict) else None
    if query_vector is not None and vectors and DENSE in vectors:
        dense_score = _cosine(query_vector, vectors[DENSE])  # type: ignore[arg-type]
    return Passage(
        text=payload.get("text", ""),
        source=payload.get("source", ""),
        title=payload.get("title", ""),
        section=payload.get("section", ""),
        score=float(point.score),
        chunk_index=int(payload.get("chunk_index", 0)),
        lang=payload.get("lang", ""),
        url=payload.get("url"),
        dense_score=dense_score,
    )


async def search(
    runtime: "Runtime",
    query: str,
    *,
    top_k: int = 5,
    collection: str | None = None,
    filters: SearchFilters | None = None,
    mode: SearchMode = "hybrid",
) -> list[Passage]:
    """The `top_k` best passages for `query` (hybrid by default)."""
    query = query.strip()
    if not query:
        return []
    with runtime.readers.reading():  # an ingest deletes a replaced version only after this ends
        return await _search(runtime, query, top_k=top_k, name=collection or runtime.settings.collection,
                             filters=filters, mode=mode)


async def _search(runtime: "Runtime", query: str, *, top_k: int, name: str, filters: SearchFilters | None,
                  mode: SearchMode) -> list[Passage]:
    metadata = await _check_collection(runtime, name)
    user_filter = filters.to_qdrant() if filters else None
    # what the asker may see (agent/audience.py), then each file wholly old or wholly new
    flt = versions.visible(user_filter if VIEWING.get() is None else narrowed(user_filter), metadata)
    if mode != "sparse" and typed_without_marks(query):
        query = await _with_marks(runtime, name, query, metadata)
    try:
        dense_vec = await runtime.embedder().embed_query(query) if mode != "sparse" else None
    except EmbedderError as exc:
        raise KnowledgeBaseUnavailable(f"cannot embed the query: {exc}") from exc
    sparse_vec = bm25_query(query) if mode != "dense" else None
    prefetch_limit = max(PREFETCH_MIN, 3 * top_k)
    expanding = runtime.settings.section_chars > 0
    limit = (2 * top_k if expanding else top_k) + TIE_SLACK  # room for passages one context absorbs
    try:
        if mode == "hybrid":
            points = await runtime.store.query_points(
                name,
                prefetch=[
                    models.Prefetch(query=dense_vec, using=DENSE, limit=prefetch_limit, filter=flt),
                    models.Prefetch(query=sparse_vec, using=SPARSE, limit=prefetch_limit, filter=flt),
                ],
                query=fusion(query),
                limit=limit,
                with_payload=True,
                with_vectors=[DENSE],
            )
        elif mode == "dense":
            points = await runtime.store.query_points(
                name, query=dense_vec, using=DENSE, query_filter=flt, limit=limit, with_payload=True,
                with_vectors=[DENSE]
            )
        else:
            points = await runtime.store.query_points(
                name, query=sparse_vec, using=SPARSE, query_filter=flt, limit=limit, with_payload=True
            )
    except Exception as exc:
        raise KnowledgeBaseUnavailable(f"search in {name!r} failed: {type(exc).__name__}: {exc}") from exc
    if not points and not user_filter and VIEWING.get() is None and await runtime.store.count(name, flt) == 0:
        raise KnowledgeBaseUnavailable(f"the knowledge base {name!r} is empty — run `askdesk ingest PATH` first")
    lang = detect_language(query, default="")  # "": no words of any language (a code, a phone number)
    own = points
    if mode == "hybrid" and CROSS_WEIGHT > 0 and lang:
        centering = language_centers.current(runtime, name, metadata, runtime.embedder().name)
        if centering is not None and lang in centering.by_lang and await _minority(runtime, name, lang):
            points = await _centered_hybrid(runtime, name, query, lang, dense_vec, sparse_vec, flt,
                                            centering, limit=limit, prefetch_limit=prefetch_limit)
        else:
            points = await _other_languages_ranked_in(runtime, name, lang, points, dense_vec, flt, centering)
    passages = [_passage(p, dense_vec) for p in points]
    centers = metadata.get(calibration.KEY)
    if dense_vec is not None and isinstance(centers, dict):
        for passage, score in zip(passages, calibration.centered(dense_vec, points, centers)):
            passage.centered_score = score
        if own is not points:
            _keep_evidence(passages, own, calibration.centered(dense_vec, own, centers), top_k)
    if not expanding:
        return ranked(passages, top_k)
    expanded = await sections.expand(runtime, name, ranked(passages, len(passages)),
                                     budget=runtime.settings.section_chars, flt=flt)
    return expanded[:top_k]


async def as_searched(runtime: "Runtime", query: str, *, collection: str | None = None) -> str:
    """`query` as search reads it: Vietnamese typed without its marks with them written back where
    the collection allows it (`_with_marks`), anything else as typed. The lines a search-only
    answer quotes are read against the same text."""
    query = query.strip()
    if not typed_without_marks(query):
        return query
    name = collection or runtime.settings.collection
    try:
        metadata = await collection_metadata(runtime, name)
    except Exception:  # noqa: BLE001 - the store is down: its search will say so
        return query
    return query if metadata is None else await _with_marks(runtime, name, query, metadata)


async def _with_marks(runtime: "Runtime", name: str, query: str, metadata: dict[str, Any]) -> str:
    """Vietnamese typed without its marks, searched with them written back from the collection's
    Vietnamese pages (agent/knowledge/vietnamese_marks.py) where those pages have a language mean
    of their own; as typed otherwise, or when the pages cannot be read."""
    centering = language_centers.current(runtime, name, metadata, runtime.embedder().name)
    if centering is None or vietnamese_marks.LANG not in centering.by_lang:
        return query
    try:
        return await vietnamese_marks.with_marks(runtime, name, query, metadata)
    except Exception:  # noqa: BLE001 - a refinement: the question is searched as typed
        return query


def _keep_evidence(passages: list[Passage], own: list[models.ScoredPoint], scores: list[float | None],
                   top_k: int) -> None:
    """Other-language passages ranked in must not take the gate's evidence away: a same-language
    passage they push out of the top `top_k` still counts in `best_centered` (the best centered
    similarity of the passages ranked before them), which every passage carries."""
    kept = ranked([_passage(p, None).model_copy(update={"centered_score": s}) for p, s in zip(own, scores)], top_k)
    best = max((p.centered_score for p in kept if p.centered_score is not None), default=None)
    for passage in passages:
        passage.best_centered = best


async def _minority(runtime: "Runtime", name: str, lang: str) -> bool:
    """`lang` is not one the collection is mainly written in (False when its statistics cannot say)."""
    try:
        vocab = await vocabulary(runtime, name)
    except Exception:  # the statistics cannot be read: search as for a main language
        return False
    return bool(vocab.chunks) and lang not in vocab.languages(MAIN_SHARE)


def _order(point: models.ScoredPoint, score: float) -> tuple[float, str, int]:
    payload = point.payload or {}
    return -score, str(payload.get("source", "")), int(payload.get("chunk_index", 0))


async def _centered_hybrid(runtime: "Runtime", name: str, query: str, lang: str, dense_vec: list[float],
                           sparse_vec: models.SparseVector, flt: models.Filter | None,
                           centering: "language_centers.Centering", *, limit: int,
                           prefetch_limit: int) -> list[models.ScoredPoint]:
    """Hybrid search for a question in a minority language: BM25 as usual; the dense side the
    best `prefetch_limit` of the nearest passages of every language and of the other languages
    (CROSS_CANDIDATES each) by centered cosine, and by raw cosine at MINORITY_RAW_WEIGHT; fused
    here by the engine's RRF (same k and weights), ties broken by document and chunk."""
    try:
        near = await runtime.store.query_points(name, query=dense_vec, using=DENSE, limit=CROSS_CANDIDATES,
                                                query_filter=flt, with_payload=True, with_vectors=[DENSE])
        far = await runtime.store.query_points(name, query=dense_vec, using=DENSE, limit=CROSS_CANDIDATES,
                                               query_filter=other_languages(flt, lang), with_payload=True,
                                               with_vectors=[DENSE])
        words = await runtime.store.query_points(name, query=sparse_vec, using=SPARSE, limit=prefetch_limit,
                                                 query_filter=flt, with_payload=True, with_vectors=[DENSE])
    except Exception as exc:
        raise KnowledgeBaseUnavailable(f"search in {name!r} failed: {type(exc).__name__}: {exc}") from exc
    candidates = list({str(p.id): p for p in [*near, *far]}.values())
    similarities = centering.similarities(centering.query(dense_vec, lang), candidates)
    dense = sorted(((p, s) for p, s in zip(candidates, similarities) if s is not None), key=lambda ps: _order(*ps))
    raw = sorted(((p, float(p.score)) for p in near), key=lambda ps: _order(*ps))
    sparse = sorted(((p, float(p.score)) for p in words), key=lambda ps: _order(*ps))
    weights = fusion(query).rrf.weights or list(RRF_WEIGHTS)
    fused: dict[str, float] = {}
    point_of: dict[str, models.ScoredPoint] = {}
    for ranking, weight in ((dense[:prefetch_limit], weights[0]), (raw[:prefetch_limit], MINORITY_RAW_WEIGHT * weights[0]),
                            (sparse, weights[1])):
        for rank, (point, _) in enumerate(ranking, start=1):
            key = str(point.id)
            fused[key] = fused.get(key, 0.0) + weight / (RRF_K + rank)
            point_of.setdefault(key, point)
    ordered = sorted(fused, key=lambda key: _order(point_of[key], fused[key]))[:limit]
    return [replace(point_of[key], score=fused[key]) for key in ordered]


async def _other_languages_ranked_in(runtime: "Runtime", name: str, lang: str, points: list[models.ScoredPoint],
                                     dense_vec: list[float], flt: models.Filter | None,
                                     centering: "language_centers.Centering | None" = None) -> list[models.ScoredPoint]:
    """The fused points with the best close passages of languages other than `lang` ranked in
    (`with_other_languages`): by centered cosine when the collection's language means are known."""
    try:
        others = await runtime.store.query_points(
            name, query=dense_vec, using=DENSE, limit=CROSS_CANDIDATES if centering else CROSS_LIMIT,
            with_payload=True, with_vectors=[DENSE], query_filter=other_languages(flt, lang),
        )
    except Exception as exc:
        raise KnowledgeBaseUnavailable(f"search in {name!r} failed: {type(exc).__name__}: {exc}") from exc
    fused = [_passage(p, dense_vec) for p in points]
    candidates = [_passage(p, None) for p in others]
    margin = None
    if centering is not None:
        query = centering.query(dense_vec, lang)
        fused = [f.model_copy(update={"dense_score": s}) for f, s in zip(fused, centering.similarities(query, points))]
        scored = [c.model_copy(update={"score": s}) for c, s in zip(candidates, centering.similarities(query, others))
                  if s is not None]
        candidates = sorted(scored, key=lambda c: -c.score)[:CROSS_LIMIT]
        margin = CROSS_CENTERED_MARGIN
    merged = with_other_languages(fused, candidates, margin=margin)
    point_of: dict[tuple[str, int], models.ScoredPoint] = {}
    for p in [*points, *others]:
        payload = p.payload or {}
        point_of.setdefault((payload.get("source", ""), int(payload.get("chunk_index", 0))), p)
    return [replace(point_of[(m.source, m.chunk_index)], score=m.score) for m in merged]


# Fused scores tie often (RRF scores are sums of a few 1/(k + rank) terms) and the engine orders
# ties differently from run to run: the same question could get a different answer, and an
# eval a different score. A few more results are fetched, ties are broken by the dense
# similarity, then by document and chunk, and the list is cut to top_k.
TIE_SLACK = 5


def _tie_order(p: Passage) -> tuple[float, float, str, int]:
    return -p.score, -(p.dense_score if p.dense_score is not None else -1.0), p.source, p.chunk_index


def ranked(passages: list[Passage], top_k: int) -> list[Passage]:
    """`passages` in a reproducible order: score, then dense similarity, then document and chunk."""
    return sorted(passages, key=_tie_order)[:top_k]
