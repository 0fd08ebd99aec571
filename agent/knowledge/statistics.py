"""What a knowledge base says about itself, computed at ingest: how many chunks hold each index
term, the words of its titles and headings, its languages and its documents' titles.

Nothing here runs inside a question's path in time proportional to the knowledge base. An ingest
updates the statistics by what changed (a new or replaced file adds its new chunks and takes
away its old ones; a pruned file takes its chunks away), saves them next to the store (under
`<data dir>/statistics/`, 0600) stamped with the collection's content version, and a process
loads them in time proportional to their own size. A full scan of the collection runs only to
build statistics that do not exist yet (a collection ingested by an older build) or no longer
match the collection (another host's ingest into a shared Qdrant server) — at ingest, at warm
start, or in the background while questions keep using the previous statistics.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, AsyncIterator

from agent.knowledge import versions
from agent.knowledge.calibration import CONTENT_KEY
from agent.knowledge.sparse import tokens
from agent import sidecar

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger(__name__)

FORMAT = 1  # bumped when what the file holds changes: older files are rebuilt
PAYLOAD = ["title", "section", "text", "lang"]  # what one chunk contributes
COUNT_SLICE = 8  # chunks counted between two yields to the event loop (~5 ms)
SCAN_PAGE = 128  # chunks read per store call while scanning (a short hold of the GIL)


@dataclass
class Statistics:
    content_version: str | None = None  # the collection content these describe
    chunks: int = 0
    df: Counter = field(default_factory=Counter)  # term -> chunks containing it
    headings: Counter = field(default_factory=Counter)  # term -> chunks whose title/section has it
    langs: Counter = field(default_factory=Counter)  # language -> chunks written in it
    titles: Counter = field(default_factory=Counter)  # document title -> chunks

    def count(self, payload: dict[str, Any], sign: int = 1) -> None:
        """Add (sign=1) or take away (sign=-1) one chunk, given its payload fields."""
        lang = payload.get("lang") or None
        title, section = str(payload.get("title") or ""), str(payload.get("section") or "")
        text = f"{title} {section} {payload.get('text') or ''}"
        for counter, keys in ((self.df, set(tokens(text, lang))), (self.headings, set(tokens(f"{title} {section}", lang))),
                              (self.langs, [lang or "und"]), (self.titles, [title.strip()] if title.strip() else [])):
            for key in keys:
                counter[key] += sign
                if counter[key] <= 0:
                    del counter[key]
        self.chunks += sign

    def to_json(self) -> dict[str, Any]:
        return {"format": FORMAT, "content_version": self.content_version, "chunks": self.chunks,
                "df": dict(self.df), "headings": dict(self.headings), "langs": dict(self.langs),
                "titles": dict(self.titles)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Statistics | None":
        if data.get("format") != FORMAT:
            return None
        return cls(content_version=data.get("content_version"), chunks=int(data.get("chunks") or 0),
                   df=Counter(data.get("df") or {}), headings=Counter(data.get("headings") or {}),
                   langs=Counter(data.get("langs") or {}), titles=Counter(data.get("titles") or {}))


KIND = "statistics"


def path_of(runtime: "Runtime", collection: str) -> Path:
    return sidecar.path(runtime, collection, KIND)


def load(runtime: "Runtime", collection: str) -> Statistics | None:
    """The saved statistics of `collection` (whatever content version they describe), or None."""
    data = sidecar.load(runtime, collection, KIND)
    return Statistics.from_json(data) if data is not None else None


def save(runtime: "Runtime", collection: str, stats: Statistics) -> None:
    sidecar.save(runtime, collection, KIND, stats.to_json())


async def chunks_of(runtime: "Runtime", collection: str, flt, batch: int = 1024) -> list[dict[str, Any]]:
    """The payloads (PAYLOAD fields) of the chunks matching `flt`."""
    return [payload async for page in pages(runtime, collection, flt, batch) for payload in page]


async def pages(runtime: "Runtime", collection: str, flt, batch: int) -> AsyncIterator[list[dict[str, Any]]]:
    offset = None
    while True:
        points, offset = await runtime.store.scroll(collection, scroll_filter=flt, limit=batch, offset=offset,
                                                    with_payload=PAYLOAD, with_vectors=False)
        yield [p.payload or {} for p in points]
        if offset is None:
            return


async def build(runtime: "Runtime", collection: str) -> Statistics:
    """Statistics from a full scan of the collection's visible chunks (see the module docstring
    for when this runs), saved for the next process."""
    metadata = await runtime.store.collection_metadata(collection)
    stats = Statistics(content_version=(metadata or {}).get(CONTENT_KEY))
    if metadata is not None:
        # counted page by page: a build in the background never holds the event loop for long
        async for page in pages(runtime, collection, versions.visible(None, metadata), SCAN_PAGE):
            for i, payload in enumerate(page, start=1):
                stats.count(payload)
                if i % COUNT_SLICE == 0:
                    await asyncio.sleep(0)
        save(runtime, collection, stats)
        log.info("statistics of %s built from %d chunks", collection, stats.chunks)
    return stats

