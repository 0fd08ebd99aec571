"""`search_facilities`: exact filters, geo radius and free-text ranking over the registry.

Filters (city, county, zip, ages, feature flags, capacity, opening time, days open, radius) are Qdrant
payload filters, so they are exact; `near` adds a `geo_radius` filter and sorts by distance.
A free-text `query` ranks the filtered set by hybrid dense + BM25 match of the facility
description (name, place, services). Modules: `schema` (arguments and results), `filters`
(arguments -> Qdrant conditions, places), `format` (text forms); this one runs the search.
"""

from __future__ import annotations

import numpy as np
from qdrant_client import models

from agent.facilities.facility import FLAGS, FacilityListing
from agent.facilities.filters import resolve
from agent.facilities.format import days_label, describe_args, format_results
from agent.facilities.geocode import Place, haversine_miles
from agent.facilities.schema import (
    MAX_RESULTS,
    FacilityHit,
    FacilityResults,
    FacilitySearchArgs,
)
from agent.knowledge.sparse import bm25_query
from agent.knowledge.store import DENSE, SPARSE
from agent.runtime import Runtime

RRF_K = 60  # reciprocal rank fusion constant (the usual 60)


def _hit(point, args: FacilitySearchArgs, near: Place | None, score: float | None) -> FacilityHit:
    """The stored payload read through the listing's fields, plus what this search computed."""
    p = point.payload or {}
    loc = p.get("location") or {}
    distance = None
    if near and loc:
        distance = round(haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), 2)
    matched = list(args.ages) + args.requested_features() + ([f"open {days_label(args.days)}"] if args.days else [])
    listing = {name: p[name] for name in FacilityListing.model_fields if p.get(name) is not None}
    return FacilityHit(
        **listing, features=[f for f in FLAGS if p.get(f)], matched_features=matched, distance_miles=distance,
        score=score, lat=loc.get("lat"), lon=loc.get("lon"), source=p.get("source", ""),
    )


_PAYLOAD = [*FacilityListing.model_fields, "location", "source", *FLAGS]  # what a hit reads
_SORT_PAYLOAD = ["name", "operation_number", "location"]


def _sort_key(payload: dict, near: Place | None) -> tuple:
    """By distance (nearest first) when searching near a place, otherwise by name."""
    name = str(payload.get("name", "")).lower(), str(payload.get("operation_number", ""))
    if near is None:
        return (0, 0.0, *name)
    loc = payload.get("location")
    if not loc:
        return (1, 0.0, *name)
    return (0, haversine_miles(near.lat, near.lon, loc["lat"], loc["lon"]), *name)


async def _scroll_all(runtime: Runtime, collection: str, flt: models.Filter | None, payload) -> list:
    points: list = []
    offset = None
    while True:
        batch, offset = await runtime.store.scroll(
            collection, scroll_filter=flt, limit=2048, offset=offset, with_payload=payload, with_vectors=False
        )
        points.extend(batch)
        if offset is None or len(points) >= 200_000:
            return points


async def _ranked(
    runtime: Runtime, collection: str, flt: models.Filter | None, query: str, limit: int
) -> tuple[list, int, str | None]:
    """Facilities ranked by the words of `query`: hybrid dense + BM25 (RRF).

    With other criteria (`flt`), the words rank the matches and never exclude one: leftover
    words of a colloquial request ("any decent daycares…") must not empty the result. Alone,
    they are a name search: only facilities sharing a word with the query are returned, and
    when none does (a typo), the closest by meaning with a note. Returns (points, total, note).
    """
    sparse = bm25_query(query)
    word_hits = []
    if sparse.indices:
        word_hits = await runtime.store.query_points(
            collection, query=sparse, using=SPARSE, query_filter=flt, limit=MAX_RESULTS, with_payload=_PAYLOAD,
            with_vectors=[DENSE],
        )
    dense = await runtime.embedder().embed_query(query)
    if flt is not None:
        by_meaning = await runtime.store.query_points(
            collection, query=dense, using=DENSE, query_filter=flt, limit=MAX_RESULTS, with_payload=_PAYLOAD,
        )
        fused = _fuse(word_hits, dense, limit)[0] if word_hits else []
        seen = {p.id for p in fused}
        points = (fused + [p for p in by_meaning if p.id not in seen])[:limit]
        return points, len(by_meaning), None
    if not word_hits:
        closest = await runtime.store.query_points(
            collection, query=dense, using=DENSE, query_filter=flt, limit=min(limit, 5), with_payload=_PAYLOAD
        )
        note = f"No facility name or description contains '{query}'; these are the closest by meaning." if closest else None
        return closest, len(closest), note
    return _fuse(word_hits, dense, limit)


def _fuse(word_hits: list, dense: list[float], limit: int) -> tuple[list, int, None]:
    """RRF of the word hits' BM25 order and their dense similarity to the query."""
    # Fuse here rather than in a second Qdrant query: the word hits carry their dense vectors,
    # so one filtered scan serves both rankings (an id filter is slow in embedded mode).
    matrix = np.asarray([p.vector[DENSE] for p in word_hits], dtype=np.float32)
    q = np.asarray(dense, dtype=np.float32)
    cosine = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q) + 1e-9)
    dense_rank = {int(i): r for r, i in enumerate(np.argsort(-cosine))}
    # word_hits come in BM25 order, so index i is the sparse rank
    fused = [(1 / (RRF_K + i + 1) + 1 / (RRF_K + dense_rank[i] + 1), i) for i in range(len(word_hits))]
    fused.sort(key=lambda t: -t[0])
    points = []
    for score, i in fused[:limit]:
        point = word_hits[i]
        point.score = score
        points.append(point)
    return points, len(word_hits), None


async def search_facilities(runtime: Runtime, args: FacilitySearchArgs, *, collection: str | None = None) -> FacilityResults:
    """Run a facility search; never raises for bad places (they come back as `message`)."""
    collection = collection or runtime.settings.facilities_collection
    if not await runtime.store.collection_exists(collection):
        msg = (
            f"The facility registry is not loaded (no collection '{collection}'). "
            "Load it with: askdesk ingest-facilities FILE.csv"
        )
        return FacilityResults(text=msg, message=msg, args=args)
    resolved = await resolve(runtime, args, collection)
    if resolved.message:
        return FacilityResults(text=resolved.message, message=resolved.message, args=args)
    flt = models.Filter(must=resolved.conditions) if resolved.conditions else None
    limit = args.limit or MAX_RESULTS
    near = resolved.near

    notes = list(resolved.notes)
    ranked = None
    if args.query:
        try:
            ranked = await _ranked(runtime, collection, flt, args.query, limit)
        except Exception as exc:  # embedder missing or mismatched: the filters still answer
            notes.append(f"Name matching is unavailable ({type(exc).__name__}: {exc}); showing all filter matches.")
    if ranked is not None:
        points, total, note = ranked
        if note:
            notes.append(note)
        hits = [_hit(p, args, near, round(p.score, 4) if p.score is not None else None) for p in points]
        if near:  # relevance picks, distance orders
            hits.sort(key=lambda h: (h.distance_miles is None, h.distance_miles or 0.0))
    else:
        # every match's sort keys, then full records for the page only
        keys = await _scroll_all(runtime, collection, flt, _SORT_PAYLOAD)
        total = len(keys)
        keys.sort(key=lambda p: _sort_key(p.payload or {}, near))
        page = [p.id for p in keys[:limit]]
        records = {p.id: p for p in await runtime.store.retrieve(collection, page, with_payload=_PAYLOAD)} if page else {}
        hits = [_hit(records[pid], args, near, None) for pid in page if pid in records]

    if total == 0:
        notes.append("No facility matches all of: " + describe_args(args, resolved.near, resolved.radius_miles) + ".")
    message = " ".join(notes) or None
    results = FacilityResults(
        facilities=hits, total=total, message=message, near=near, radius_miles=resolved.radius_miles, args=args
    )
    results.text = format_results(results)
    return results

