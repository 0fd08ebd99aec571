"""How close in meaning the lines a search-only answer may quote are to the question: the
closeness `answer_lines` weighs beside their words (agent/knowledge/answer_lines.py).

Only the lines worth checking are embedded (`to_weigh`: the matched chunks' lines and the best
lines by words, two dozen at most), with the collection's own embedder in passage mode, through
the data directory's embedding cache: a section's lines are embedded once per deployment, the
shipped examples' come with their seeds (scripts/seed-examples). The question's vector is the
one its search already computed (the query cache).

This is a refinement, never a condition of an answer: an embedder or cache that fails leaves
the lines to their words.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from agent.knowledge.answer_lines import to_weigh
from agent.knowledge.embed_cache import embed_with_cache, open_cache

if TYPE_CHECKING:
    from agent.knowledge.search import Passage
    from agent.runtime import Runtime

log = logging.getLogger(__name__)


async def line_closeness(runtime: "Runtime", question: str, passages: "list[Passage]") -> dict[str, float]:
    """Each weighed line's text, and the text of the question on the page it answers
    (`Unit.asks`): the cosine of its embedding to the question's ({}: nothing to weigh, or the
    embedder failed)."""
    lines = to_weigh(question, passages)
    if len(lines) < 2:
        return {}
    asked = list(dict.fromkeys(u.asks for u in lines if u.asks))
    try:
        embedder = runtime.embedder()
        query = np.asarray(await embedder.embed_query(question), dtype=np.float32)
        cache = open_cache(runtime.settings)
        try:
            vectors = np.asarray(await embed_with_cache(embedder, [*(u.weighed() for u in lines), *asked], cache),
                                 dtype=np.float32)
        finally:
            if cache is not None:
                cache.close()
    except Exception as exc:  # noqa: BLE001 - the lines keep their words' order
        log.warning("answer lines: not weighed by meaning (%s: %s)", type(exc).__name__, exc)
        return {}
    norms = np.linalg.norm(vectors, axis=1) * max(float(np.linalg.norm(query)), 1e-9)
    cosines = vectors @ query / np.maximum(norms, 1e-9)
    return dict(zip([*(u.text for u in lines), *asked], map(float, cosines)))


async def embed_every_line(runtime: "Runtime", collection: str | None = None) -> int:
    """Embed into the data directory's cache the lines of every chunk's section as a search
    shows it (its `context`): what scripts/seed-examples ships beside an example, so its first
    answers weigh their lines without embedding any. Returns how many lines were embedded."""
    from agent.knowledge import sections
    from agent.knowledge.answer_lines import units
    from agent.knowledge.search import Passage

    name = collection or runtime.settings.collection
    texts: dict[str, None] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(name, limit=256, offset=offset, with_vectors=False,
                                                    with_payload=["text", "section", "chunk_index", "source"])
        for point in points:
            payload = point.payload or {}
            chunk = Passage(text=str(payload.get("text", "")), source=str(payload.get("source", "")),
                            section=str(payload.get("section", "")), chunk_index=int(payload.get("chunk_index", 0)),
                            score=0.0)
            [shown] = await sections.expand(runtime, name, [chunk], budget=runtime.settings.section_chars) or [chunk]
            for unit in units(shown.context or shown.text):
                texts[unit.weighed()] = None
                if unit.asks:
                    texts[unit.asks] = None
        if offset is None:
            break
    cache = open_cache(runtime.settings)
    try:
        await embed_with_cache(runtime.embedder(), list(texts), cache)
    finally:
        if cache is not None:
            cache.close()
    return len(texts)
