"""One ranking from several searches: weighted reciprocal-rank fusion of their passages.

The router searches a follow-up twice — the message alone and the message in the thread's
context — and fuses the two lists, so neither a thread-blind search nor a long earlier
question that drowns the new detail decides alone. Passages found by both rise.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.knowledge.search import Passage, search

if TYPE_CHECKING:
    from agent.runtime import Runtime

RRF_K = 10  # rank constant of the fusion (lists here are short and already well ordered)


def fuse(lists: list[tuple[list[Passage], float]], top_k: int, k: int = RRF_K) -> list[Passage]:
    """Weighted RRF over passage identity (source, chunk); the best dense score is kept."""
    scores: dict[tuple[str, int], float] = {}
    best: dict[tuple[str, int], Passage] = {}
    for passages, weight in lists:
        for rank, p in enumerate(passages, start=1):
            key = (p.source, p.chunk_index)
            scores[key] = scores.get(key, 0.0) + weight / (k + rank)
            kept = best.get(key)
            if kept is None or (p.dense_score or 0.0) > (kept.dense_score or 0.0):
                best[key] = p
    order = sorted(scores, key=lambda key: (-scores[key], key))[:top_k]  # ties: document, then chunk
    return [best[key].model_copy(update={"score": round(scores[key], 6)}) for key in order]


async def search_fused(
    runtime: "Runtime", searches: list[tuple[str, float]], *, top_k: int = 5, collection: str | None = None
) -> list[Passage]:
    """`search` for one query; weighted RRF of each query's results for several."""
    searches = [(q, w) for q, w in searches if q and q.strip()]
    if len(searches) <= 1:
        return await search(runtime, searches[0][0], top_k=top_k, collection=collection) if searches else []
    depth = max(3 * top_k, 15)
    lists = [(await search(runtime, q, top_k=depth, collection=collection), w) for q, w in searches]
    return fuse(lists, top_k)
