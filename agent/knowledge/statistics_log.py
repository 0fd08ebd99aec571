"""What each ingest changed in the statistics, kept in the store itself for the other hosts.

Every host keeps a collection's statistics in its own data dir (statistics.py). With a shared
Qdrant server (`ASKDESK_QDRANT_URL`), another host's ingest changes the collection but not this
host's file; rebuilding it by a scan costs time proportional to the knowledge base (minutes of
background work at 1M chunks, and a new replica would scan before it is ready). Instead, an
ingest into a shared store publishes what it changed as an entry of a small log collection
beside the knowledge collection (`<collection>__statistics`): from the content version it started
from to the one it wrote, written before the new version is announced. A host catches up by
applying the entries between the version its file describes and the current one — time
proportional to what changed. The first ingest, and a scan of a collection from an older build,
publish a full copy (an entry from nothing): a host with no file reads that, in time proportional
to the statistics. When the log holds more than MAX_ENTRIES entries the ingesting host replaces
them with one full copy of its statistics.

Entries are zlib-compressed JSON split into parts of at most PART_CHARS characters (one point
each; a full copy at 1M synthetic chunks is a few parts).
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import uuid
import zlib
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

import agent.store.models as models
from agent.knowledge import statistics
from agent.knowledge.statistics import Statistics

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

SUFFIX = "__statistics"
PART_CHARS = 1 << 20  # one point's share of an entry (requests to a server stay small)
MAX_ENTRIES = 16  # entries kept before they are replaced by one full copy
NAMESPACE = uuid.UUID("6f1d3c1e-8a52-4c55-9a0e-5b7f4f0c2a11")
HEAD = ["entry", "base", "part", "parts"]  # what a catch-up reads first (no data)


def log_name(collection: str) -> str:
    return collection + SUFFIX


def encode(stats: Statistics) -> str:
    data = {"chunks": stats.chunks, "df": list(stats.df.items()), "headings": list(stats.headings.items()),
            "langs": list(stats.langs.items()), "titles": list(stats.titles.items())}
    return base64.b64encode(zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 6)).decode()


def decode(text: str, version: str) -> Statistics:
    data = json.loads(zlib.decompress(base64.b64decode(text)))
    return Statistics(content_version=version, chunks=int(data["chunks"]),
                      **{key: Counter(dict(data[key]))
                         for key in ("df", "headings", "langs", "titles")})


@dataclass
class Entry:
    version: str  # the content version these statistics lead to
    base: str  # the version they apply to ("" for a full copy)
    parts: int
    ids: list[str]

    @property
    def full(self) -> bool:
        return not self.base


def _point_id(version: str, base: str, part: int) -> str:
    return str(uuid.uuid5(NAMESPACE, f"{version}:{base}:{part}"))


async def _ensure(runtime: "Runtime", collection: str) -> str:
    name = log_name(collection)
    if not await runtime.store.collection_exists(name):
        await runtime.store.create_collection(name, dim=1, metadata={"statistics_of": collection})
    return name


async def write_entry(runtime: "Runtime", collection: str, stats: Statistics, base: str | None) -> list[str]:
    """Publish `stats` as the change from content version `base` (None: a full copy) to
    `stats.content_version` (its point ids). Any store works; `publish` decides when one is
    needed."""
    name = await _ensure(runtime, collection)
    text = await asyncio.to_thread(encode, stats)
    chunks = [text[i:i + PART_CHARS] for i in range(0, len(text), PART_CHARS)] or [""]
    version, base = stats.content_version or "", base or ""
    points = [models.PointStruct(id=_point_id(version, base, i), vector={"dense": [1.0]},
                                 payload={"entry": version, "base": base, "part": i, "parts": len(chunks), "data": part})
              for i, part in enumerate(chunks)]
    await runtime.store.upsert(name, points)
    return [p.id for p in points]


def shared(runtime: "Runtime") -> bool:
    """Other hosts may read this store: what an ingest changed must be published."""
    return not runtime.store.exclusive


async def publish(runtime: "Runtime", collection: str, stats: Statistics, base: str | None) -> None:
    """An ingest into a shared store: publish its change before it announces the new version
    (a failure is logged; other hosts then rebuild by a scan, as without a log)."""
    if not shared(runtime):
        return
    try:
        await write_entry(runtime, collection, stats, base)
    except Exception as exc:
        log.warning("statistics of %s not published: %s", collection, type(exc).__name__)


async def rebuild(runtime: "Runtime", collection: str) -> Statistics:
    """The statistics rebuilt by a scan (statistics.build), published as a full copy so that the
    other hosts of a shared store need not scan too."""
    stats = await statistics.build(runtime, collection)
    if stats.content_version:
        await publish(runtime, collection, stats, None)
    return stats


async def entries(runtime: "Runtime", collection: str) -> dict[str, list[Entry]]:
    """The log's complete entries by the version they lead to ({} when there is no log)."""
    name = log_name(collection)
    if not await runtime.store.collection_exists(name):
        return {}
    found: dict[tuple[str, str], Entry] = {}
    offset = None
    while True:
        points, offset = await runtime.store.scroll(name, limit=256, offset=offset, with_payload=HEAD)
        for p in points:
            head = p.payload or {}
            key = (str(head.get("entry") or ""), str(head.get("base") or ""))
            entry = found.setdefault(key, Entry(key[0], key[1], int(head.get("parts") or 1), []))
            entry.ids.append(str(p.id))
        if offset is None:
            break
    out: dict[str, list[Entry]] = {}
    for entry in found.values():
        if entry.version and len(entry.ids) == entry.parts:
            out.setdefault(entry.version, []).append(entry)
    return out


def path(log_entries: dict[str, list[Entry]], have: str | None, target: str) -> list[Entry] | None:
    """The entries leading from the statistics of version `have` (None: no statistics) to
    `target`, oldest first: the changes since `have` where they lead there (each a fraction of
    a full copy), else the fewest entries from a full copy; None when the log has no way there."""
    return _path(log_entries, have, target, False) or _path(log_entries, have, target, True)


def _path(log_entries: dict[str, list[Entry]], have: str | None, target: str, copies: bool,
          depth: int = 0) -> list[Entry] | None:
    if target == have:
        return []
    if depth > len(log_entries):  # a cycle (a version written twice): no way through it
        return None
    best: list[Entry] | None = None
    for entry in log_entries.get(target, []):
        if entry.full and not copies:
            continue
        before = [] if entry.full else _path(log_entries, have, entry.base, copies, depth + 1)
        if before is not None and (best is None or len(before) + 1 < len(best)):
            best = [*before, entry]
    return best


async def _read(runtime: "Runtime", collection: str, entry: Entry) -> Statistics | None:
    points = await runtime.store.retrieve(log_name(collection), entry.ids, with_payload=["part", "data"])
    if len(points) != entry.parts:
        return None  # replaced meanwhile
    text = "".join(str((p.payload or {}).get("data") or "") for p in sorted(points, key=lambda p: p.payload["part"]))
    return await asyncio.to_thread(decode, text, entry.version)


async def catch_up(runtime: "Runtime", collection: str, target: str | None) -> bool:
    """Bring this host's saved statistics to content version `target` from the log; False when
    the log cannot (no log, or no path to `target`): the caller rebuilds them by a scan."""
    if not target:
        return False
    for _ in range(2):  # once more if the log was compacted while it was read
        saved = statistics.open_saved(runtime, collection)
        have = saved.content_version if saved is not None else None
        if have == target:
            return True
        chain = path(await entries(runtime, collection), have, target)
        if chain is None:
            return False
        for entry in chain:
            stats = await _read(runtime, collection, entry)
            if stats is None:
                break
            if entry.full:
                await statistics.save(runtime, collection, stats)
            elif not await statistics.apply(runtime, collection, stats, expect=entry.base):
                break  # another process of this host applied it first
        else:
            log.info("statistics of %s caught up to %s from the log (%d entries)", collection, target, len(chain))
            return True
    saved = statistics.open_saved(runtime, collection)
    return saved is not None and saved.content_version == target


async def compact(runtime: "Runtime", collection: str) -> None:
    """After an ingest into a shared store: a log of more than MAX_ENTRIES entries is replaced
    by one full copy of this host's statistics (which describe the collection as it now is)."""
    if not shared(runtime):
        return
    try:
        log_entries = await entries(runtime, collection)
        if sum(len(v) for v in log_entries.values()) <= MAX_ENTRIES:
            return
        stats = await asyncio.to_thread(statistics.load, runtime, collection)
        if stats is None or not stats.content_version:
            return
        keep = set(await write_entry(runtime, collection, stats, None))
        stale = [i for v in log_entries.values() for e in v for i in e.ids if i not in keep]
        await runtime.store.delete_ids(log_name(collection), stale)
    except Exception as exc:
        log.warning("statistics log of %s not compacted: %s", collection, type(exc).__name__)
