"""`askdesk ingest-facilities`: registry CSV -> facility collection, idempotently.

Point ids come from operation numbers and every payload carries a content hash, so a re-run
embeds and writes only new or changed facilities and changes nothing when the file is the
same. Facilities of the same source file that disappeared from it are removed (the file is
the registry snapshot); rows that fail to parse are reported and their stored versions kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent.facilities.places import forget_places
from agent.facilities.registry import ParsedRegistry, RowError, facility_point_id, parse_registry
from agent.facilities.store import delete_points, ensure_facility_collection, stored_hashes, upsert_facilities

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime


@dataclass
class IngestReport:
    source: str
    collection: str
    rows: int = 0
    loaded: int = 0  # valid facilities in the file
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    errors: list[RowError] = field(default_factory=list)

    def summary(self) -> str:
        head = (
            f"{self.source} -> collection '{self.collection}': {self.loaded} of {self.rows} rows loaded "
            f"({self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed)"
        )
        if not self.errors:
            return head + "."
        lines = [head + f"; {len(self.errors)} bad row(s) skipped:"]
        lines += [f"  {e}" for e in self.errors]
        return "\n".join(lines)


async def ingest_parsed(
    runtime: "Runtime", parsed: ParsedRegistry, *, collection: str | None = None, embedder: "Embedder | None" = None
) -> IngestReport:
    collection = collection or runtime.settings.facilities_collection
    embedder = embedder or runtime.embedder()
    report = IngestReport(source=parsed.source, collection=collection, rows=parsed.rows,
                          loaded=len(parsed.facilities), errors=list(parsed.errors))
    await ensure_facility_collection(runtime, collection, embedder=embedder)
    stored = await stored_hashes(runtime, collection)
    changed = []
    for facility in parsed.facilities:
        previous = stored.get(facility.point_id())
        if previous is None:
            report.added += 1
            changed.append(facility)
        elif previous.get("content_hash") != facility.content_hash() or previous.get("source") != parsed.source:
            report.updated += 1
            changed.append(facility)
        else:
            report.unchanged += 1
    await upsert_facilities(runtime, collection, changed, source=parsed.source, embedder=embedder)
    keep = {f.point_id() for f in parsed.facilities} | _bad_row_ids(parsed)
    gone = [pid for pid, p in stored.items() if p.get("source") == parsed.source and pid not in keep]
    await delete_points(runtime, collection, gone)
    report.removed = len(gone)
    forget_places(runtime, collection)
    return report


def _bad_row_ids(parsed: ParsedRegistry) -> set[str]:
    """Point ids of rows that failed to parse but named an operation number: keep their old version."""
    return {facility_point_id(num) for num in parsed.unparsed_numbers}


async def ingest_facilities(
    runtime: "Runtime", path: Path, *, collection: str | None = None, embedder: "Embedder | None" = None
) -> IngestReport:
    parsed = parse_registry(Path(path), columns=runtime.settings.facilities_columns)
    return await ingest_parsed(runtime, parsed, collection=collection, embedder=embedder)
