"""A registry search: exact payload filters, a geo radius, and free-text ranking of names.

Filters are Qdrant payload filters, so they are exact; `near` adds a `geo_radius` filter and
sorts by distance. A free-text `query` ranks the filtered set by hybrid dense + BM25 match of
the record's description (name, place, services): with other criteria its words rank and never
exclude; alone they are a name search (a typo gets the closest by meaning, said so).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

import agent.store.models as models
from agent.knowledge.sparse import bm25_query
from agent.knowledge.store import DENSE, SPARSE
from agent.registry.arguments import MAX_RESULTS
from agent.registry.geocoder import haversine_miles
from agent.registry.places import Place
from agent.registry.results import RegistryHit
from agent.registry.template import names_in
from agent.registry.values import days_label

if TYPE_CHECKING:
    from agent.registry.declaration import Declaration
    from agent.runtime import Runtime

RRF_K = 60  # reciprocal rank fusion constant (the usual 60)


def shown_fields(decl: "Declaration") -> list[str]:
    """The fields a hit needs: those the display, `--json` and citations name, its id and name,
    its flags and point (reading fewer payload fields keeps large result sets fast)."""
    named: set[str] = {decl.id_field, decl.name_field, *decl.flags, *decl.json_fields}
    display = decl.display
    for piece in [*display.line, *display.details, *display.more]:
        for template in piece.compiled():
            named.update(template.names)
    named.update(t for t in (display.title, display.url) if t)
    if decl.reference:
        named.update(names_in(decl.reference))
    if decl.geo:
        named.add(decl.geo[0])
    return [name for name in decl.fields if name in named]


class Searcher:
    def __init__(self, runtime: "Runtime", decl: "Declaration", collection: str) -> None:
        self.runtime, self.decl, self.collection = runtime, decl, collection
        self.geo = decl.geo[0] if decl.geo else None
        self.id_field, self.name_field = decl.id_field, decl.name_field
        self.flags, self.tags = list(decl.flags), list(decl.tags)
        self.days = decl.days[0] if decl.days else None
        self.fields = shown_fields(decl)
        self.payload = [*self.fields, "source"]  # what a hit reads
        self.sort_payload = [self.name_field, self.id_field, *([self.geo] if self.geo else [])]

    def hit(self, point, args: Any, near: Place | None, score: float | None) -> RegistryHit:
        """The stored payload, plus what this search computed."""
        p = point.payload or {}
        loc = (p.get(self.geo) or {}) if self.geo else {}
        distance = round(haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), 2) if near and loc else None
        matched = [v for name in self.tags for v in getattr(args, name)] + args.requested_flags()
        if self.days and args.days:
            matched.append(f"open {days_label(args.days)}")
        values = {name: p[name] for name in self.fields if p.get(name) is not None}
        return RegistryHit.model_construct(  # the store's own values: nothing to validate
            id=str(p.get(self.id_field, "")), values=values, flags=[f for f in self.flags if p.get(f)], matched=matched,
            distance_miles=distance, score=score, lat=loc.get("lat"), lon=loc.get("lon"), source=p.get("source", ""))

    def sort_key(self, payload: dict, near: Place | None) -> tuple:
        """By distance (nearest first) when searching near a place, otherwise by name."""
        name = str(payload.get(self.name_field, "")).lower(), str(payload.get(self.id_field, ""))
        if near is None:
            return (0, 0.0, *name)
        loc = payload.get(self.geo) if self.geo else None
        if not loc:
            return (1, 0.0, *name)
        return (0, haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), *name)

    async def scroll_all(self, flt: models.Filter | None) -> list:
        points: list = []
        offset = None
        while True:
            batch, offset = await self.runtime.store.scroll(
                self.collection, scroll_filter=flt, limit=2048, offset=offset, with_payload=self.sort_payload,
                with_vectors=False)
            points.extend(batch)
            if offset is None or len(points) >= 200_000:
                return points

    async def ranked(self, flt: models.Filter | None, query: str, limit: int) -> tuple[list, int, bool]:
        """Records ranked by the words of `query`: hybrid dense + BM25 (RRF). Returns (points, total,
        closest): `closest` when no record holds the words and these are the closest by meaning."""
        store, c = self.runtime.store, self.collection
        sparse = bm25_query(query)
        word_hits = []
        if sparse.indices:
            word_hits = await store.query_points(c, query=sparse, using=SPARSE, query_filter=flt, limit=MAX_RESULTS,
                                                 with_payload=self.payload, with_vectors=[DENSE])
            word_hits = ties_by_id(word_hits)
        dense = await self.runtime.embedder().embed_query(query)
        if flt is not None:
            by_meaning = ties_by_id(await store.query_points(c, query=dense, using=DENSE, query_filter=flt,
                                                             limit=MAX_RESULTS, with_payload=self.payload))
            fused = fuse(word_hits, dense, limit)[0] if word_hits else []
            seen = {p.id for p in fused}
            return (fused + [p for p in by_meaning if p.id not in seen])[:limit], len(by_meaning), False
        if not word_hits:
            closest = ties_by_id(await store.query_points(c, query=dense, using=DENSE, query_filter=flt,
                                                          limit=min(limit, 5), with_payload=self.payload))
            return closest, len(closest), bool(closest)
        return fuse(word_hits, dense, limit)

    async def retrieve(self, ids: list) -> dict:
        if not ids:
            return {}
        return {p.id: p for p in await self.runtime.store.retrieve(self.collection, ids, with_payload=self.payload)}


def ties_by_id(points: list) -> list:
    """Equal scores in id order: the store returns them in its segments' order, which an
    optimizer run may change, and the same request must rank the same way every time."""
    return sorted(points, key=lambda p: (-(p.score or 0.0), str(p.id)))


def fuse(word_hits: list, dense: list[float], limit: int) -> tuple[list, int, bool]:
    """RRF of the word hits' BM25 order and their dense similarity to the query (one filtered
    scan serves both rankings: the word hits carry their dense vectors)."""
    matrix = np.asarray([p.vector[DENSE] for p in word_hits], dtype=np.float32)
    q = np.asarray(dense, dtype=np.float32)
    cosine = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q) + 1e-9)
    dense_rank = {int(i): r for r, i in enumerate(np.argsort(-cosine, kind="stable"))}  # ties: word order
    fused = [(1 / (RRF_K + i + 1) + 1 / (RRF_K + dense_rank[i] + 1), i) for i in range(len(word_hits))]
    fused.sort(key=lambda t: (-t[0], t[1]))
    points = []
    for score, i in fused[:limit]:
        point = word_hits[i]
        point.score = score
        points.append(point)
    return points, len(word_hits), False
