"""One ranking from several searches: weighted reciprocal-rank fusion of their passages.

The router searches a follow-up twice — the message alone and the message in the thread's
context — and fuses the two lists, so neither a thread-blind search nor a long earlier
question that drowns the new detail decides alone. Passages found by both rise; so do the places
both found through different chunks of one section (agent/knowledge/sections.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.knowledge.search import Passage, search

if TYPE_CHECKING:
    from agent.runtime import Runtime

RRF_K = 10  # rank constant of the fusion (lists here are short and already well ordered)


def _reach(p: Passage) -> tuple[int, int]:
    return p.span or (p.chunk_index, p.chunk_index)


def fuse(lists: list[tuple[list[Passage], float]], top_k: int, k: int = RRF_K) -> list[Passage]:
    """Weighted RRF over the places passages show: two passages of one document whose contexts
    share a chunk are one place (two searches may match different chunks of the same section).
    Each place keeps the passage with the best dense score."""
    scores: list[float] = []
    best: list[Passage] = []
    for passages, weight in lists:
        for rank, p in enumerate(passages, start=1):
            lo, hi = _reach(p)
            place = next((i for i, kept in enumerate(best) if kept.source == p.source
                          and lo <= _reach(kept)[1] and _reach(kept)[0] <= hi), None)
            if place is None:
                scores.append(0.0)
                best.append(p)
                place = len(best) - 1
            scores[place] += weight / (k + rank)
            if (p.dense_score or 0.0) > (best[place].dense_score or 0.0):
                best[place] = p
    order = sorted(range(len(best)), key=lambda i: (-scores[i], best[i].source, best[i].chunk_index))[:top_k]
    return [best[i].model_copy(update={"score": round(scores[i], 6)}) for i in order]


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
