"""Hybrid search over a knowledge collection: dense + BM25 prefetch fused by RRF in Qdrant.

`Passage.dense_score` is the cosine similarity between the query and the passage even in
hybrid mode (RRF scores are ranks, not evidence strength); the formatted-context tool uses it
to flag weak evidence.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

import agent.store.models as models
from agent.audience import VIEWING, narrowed
from agent.knowledge import versions
from agent.knowledge import calibration
from agent.knowledge.embedders import EmbedderError
from agent.knowledge.sparse import bm25_query
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

# Candidates each retriever contributes to the fusion. Wider than top_k so that a passage
# ranked mid-list by both retrievers can win; small enough to stay fast.
PREFETCH_MIN = 30
# RRF constant and per-retriever weights (dense, sparse), chosen by 5-fold cross-validation
# over the dev questions (bench/cv_fusion.py: picked on the other folds in 4 of 5 folds and on
# the whole set; held-out-fold MRR 0.922, recall@5 1.0). Qdrant's own default k=2 rewards a
# passage that one retriever is sure about; the multilingual dense model is the stronger
# retriever here, so BM25 counts less (Qdrant applies a weight w as rank/w). k=20 and k=60
# (the textbook value) lose questions that only the dense retriever finds.
# A query holding an exact identifier (a figure, code, phone number or e-mail address: any
# digit or "@") gives BM25 full weight: that is what embeddings cannot represent, and the one
# chunk that contains "1-888-265-6461" must beat the dense retriever's vague favourite.
RRF_K = 2
RRF_WEIGHTS = (1.0, 0.4)
RRF_WEIGHTS_EXACT = (1.0, 1.0)
_EXACT_TERM = re.compile(r"\d|@")


def fusion(query: str) -> models.RrfQuery:
    """The RRF parameters for `query` (see the constants above)."""
    weights = RRF_WEIGHTS_EXACT if _EXACT_TERM.search(query) else RRF_WEIGHTS
    return models.RrfQuery(rrf=models.Rrf(k=RRF_K, weights=list(weights)))


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
    # the same similarity measured from the collection's calibrated centers (agent/knowledge/
    # calibration.py): the off-topic gate's evidence; None before the collection is calibrated
    centered_score: float | None = None


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
    try:
        dense_vec = await runtime.embedder().embed_query(query) if mode != "sparse" else None
    except EmbedderError as exc:
        raise KnowledgeBaseUnavailable(f"cannot embed the query: {exc}") from exc
    sparse_vec = bm25_query(query) if mode != "dense" else None
    prefetch_limit = max(PREFETCH_MIN, 3 * top_k)
    try:
        if mode == "hybrid":
            points = await runtime.store.query_points(
                name,
                prefetch=[
                    models.Prefetch(query=dense_vec, using=DENSE, limit=prefetch_limit, filter=flt),
                    models.Prefetch(query=sparse_vec, using=SPARSE, limit=prefetch_limit, filter=flt),
                ],
                query=fusion(query),
                limit=top_k + TIE_SLACK,
                with_payload=True,
                with_vectors=[DENSE],
            )
        elif mode == "dense":
            points = await runtime.store.query_points(
                name, query=dense_vec, using=DENSE, query_filter=flt, limit=top_k + TIE_SLACK, with_payload=True,
                with_vectors=[DENSE]
            )
        else:
            points = await runtime.store.query_points(
                name, query=sparse_vec, using=SPARSE, query_filter=flt, limit=top_k + TIE_SLACK, with_payload=True
            )
    except Exception as exc:
        raise KnowledgeBaseUnavailable(f"search in {name!r} failed: {type(exc).__name__}: {exc}") from exc
    if not points and not user_filter and VIEWING.get() is None and await runtime.store.count(name, flt) == 0:
        raise KnowledgeBaseUnavailable(f"the knowledge base {name!r} is empty — run `askdesk ingest PATH` first")
    passages = [_passage(p, dense_vec) for p in points]
    centers = metadata.get(calibration.KEY)
    if dense_vec is not None and isinstance(centers, dict):
        for passage, score in zip(passages, calibration.centered(dense_vec, points, centers)):
            passage.centered_score = score
    return ranked(passages, top_k)


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
