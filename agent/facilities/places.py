"""The registry's known places (city/county names and centroids), read once and cached.

The parser needs the names on every `/facility` call and the search needs them to check
city/county filters, so they are read from the collection with one scroll and kept per
(store, collection). After `TTL_SECONDS` (another process may have re-ingested into
a Qdrant server) the cached copy is still served while a background task reloads it, so no
command waits for a scroll of a large registry; ingestion in this process drops the entry.
"""

from __future__ import annotations

import asyncio
import time
import weakref

from agent.facilities.geocode import KnownPlaces
from agent.runtime import Runtime

TTL_SECONDS = 300.0
_FIELDS = ["city", "county", "zip5", "location"]
# client -> collection -> (loaded at, places); weak keys: a closed runtime's entries go with it
_cache: "weakref.WeakKeyDictionary[object, dict[str, tuple[float, KnownPlaces]]]" = weakref.WeakKeyDictionary()
_refreshing: dict[tuple[int, str], asyncio.Task] = {}


async def _load(runtime: Runtime, collection: str) -> KnownPlaces:
    records = []
    if await runtime.store.collection_exists(collection):
        offset = None
        while True:
            points, offset = await runtime.store.scroll(
                collection, limit=4096, offset=offset, with_payload=_FIELDS, with_vectors=False
            )
            for p in points:
                payload = p.payload or {}
                loc = payload.get("location") or {}
                records.append(
                    (payload.get("city") or "", payload.get("county") or "", payload.get("zip5") or "",
                     loc.get("lat"), loc.get("lon"))
                )
            if offset is None:
                break
    places = KnownPlaces.from_records(records)
    _cache.setdefault(runtime.store, {})[collection] = (time.monotonic(), places)
    return places


async def known_places(runtime: Runtime, collection: str | None = None) -> KnownPlaces:
    collection = collection or runtime.settings.facilities_collection
    key = (id(runtime.store), collection)
    hit = _cache.get(runtime.store, {}).get(collection)
    if hit is None:
        return await _load(runtime, collection)
    if time.monotonic() - hit[0] >= TTL_SECONDS and key not in _refreshing:
        task = asyncio.create_task(_load(runtime, collection))
        _refreshing[key] = task
        task.add_done_callback(lambda _t: _refreshing.pop(key, None))
    return hit[1]


def forget_places(runtime: Runtime, collection: str) -> None:
    _cache.get(runtime.store, {}).pop(collection, None)
