"""Do the search by meaning and the search by words find the same passage?

A question the documents answer is usually answered by one passage that both retrievers rank
near the top: its words are there (BM25) and so is its meaning (the embedding). When the
documents do not answer it, each retriever settles on its own nearest miss — a passage on the
same subject by meaning, another that shares a few words — and their best passages differ.
Agreement between independent rankings is a classic predictor of retrieval quality (query
performance prediction); askdesk reads it as evidence that the documents support an answer
(agent/understanding/answerable.py). Two id-only searches, a few milliseconds: the query's
vector comes from the runtime's in-memory query cache (the turn's search embedded it).

On the spent answerable/unanswerable sets of three organisations (docs/answerable.md) the best
passage of one retriever is in the other's top WINDOW for 65 of 72 answerable questions and for
50 of 102 unanswerable ones (when BM25 finds nothing at all — a question in a language the
documents are not written in — agreement is unknown, not a disagreement).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from agent.knowledge import versions
from agent.knowledge.sparse import bm25_query
from agent.knowledge.store import DENSE, SPARSE, collection_metadata

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

WINDOW = 3  # the other retriever's top passages its best one must be among


async def retrievers_agree(runtime: "Runtime", query: str, collection: str | None = None) -> bool | None:
    """True when the dense best passage is in BM25's top WINDOW or the other way round; None
    when it cannot be told (nothing found by one of them, or the store failed)."""
    name = collection or runtime.settings.collection
    query = query.strip()
    if not query:
        return None
    try:
        metadata = await collection_metadata(runtime, name)
        if metadata is None:
            return None
        flt = versions.visible(None, metadata)
        vector = await runtime.embedder().embed_query(query)
        with runtime.readers.reading():
            dense = await runtime.store.query_points(name, query=vector, using=DENSE, query_filter=flt,
                                                     limit=WINDOW, with_payload=False)
            sparse = await runtime.store.query_points(name, query=bm25_query(query), using=SPARSE,
                                                      query_filter=flt, limit=WINDOW, with_payload=False)
    except Exception as exc:  # the judgement goes on without this evidence
        log.warning("retriever agreement unavailable: %s", type(exc).__name__)
        return None
    if not dense or not sparse:
        return None
    by_meaning, by_words = [str(p.id) for p in dense], [str(p.id) for p in sparse]
    return by_meaning[0] in by_words or by_words[0] in by_meaning
