"""A registry CSV -> its collection, idempotently and incrementally.

Point ids come from record ids and every payload carries a content hash, so a re-run embeds and
writes only new or changed records and changes nothing when the file is the same. Records of
the same source file that disappeared from it are removed (the file is the registry snapshot);
rows that fail to parse are reported and their stored versions kept. The registry's known places
are updated by the same difference (the records that left and those that entered), from the
places saved for the registry as it was, without reading its records again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agent.registry.places import KnownPlaces, PlaceLevels
from agent.registry.records import ParsedRows, RecordSchema, RowError
from agent.registry.store import ensure_registry_collection, mark_changed, stored_hashes, upsert_records

if TYPE_CHECKING:
    from agent.knowledge.embedders import Embedder
    from agent.runtime import Runtime


@dataclass
class IngestReport:
    source: str
    collection: str
    rows: int = 0
    loaded: int = 0  # valid records in the file
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    errors: list[RowError] = field(default_factory=list)
    places: KnownPlaces | None = field(default=None, repr=False)  # after this ingest, when it changed any

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


async def ingest_rows(runtime: "Runtime", schema: RecordSchema, parsed: ParsedRows, *, collection: str,
                      embedder: "Embedder | None" = None, levels: PlaceLevels | None = None,
                      known: KnownPlaces | None = None) -> IngestReport:
    """`known`: the places saved for the registry as it is (None: counted from its records,
    which the difference reads anyway); `report.places` holds them as the ingest leaves them."""
    embedder = embedder or runtime.embedder()
    id_field = schema.decl.id_field
    report = IngestReport(source=parsed.source, collection=collection, rows=parsed.rows,
                          loaded=len(parsed.records), errors=list(parsed.errors))
    await ensure_registry_collection(runtime, schema, collection, embedder=embedder)
    stored = await stored_hashes(runtime, collection, id_field, levels.stored_fields() if levels else None)
    changed, left = [], []
    for record in parsed.records:
        previous = stored.get(schema.point_id(record[id_field]))
        if previous is None:
            report.added += 1
            changed.append(record)
        elif previous.get("content_hash") != schema.content_hash(record) or previous.get("source") != parsed.source:
            report.updated += 1
            changed.append(record)
            left.append(previous)
        else:
            report.unchanged += 1
    await upsert_records(runtime, schema, collection, changed, source=parsed.source, embedder=embedder)
    keep = {schema.point_id(r[id_field]) for r in parsed.records} | {schema.point_id(i) for i in parsed.unparsed_ids}
    gone = [pid for pid, p in stored.items() if p.get("source") == parsed.source and pid not in keep]
    await runtime.store.delete_ids(collection, gone)
    report.removed = len(gone)
    if levels is not None and (changed or gone):
        places = known if known is not None else KnownPlaces.from_records(levels, map(levels.located, stored.values()))
        places.count(levels, map(levels.located, [*left, *(stored[pid] for pid in gone)]), -1)
        places.count(levels, map(levels.located, changed))
        report.places = places
    if changed or gone:
        await mark_changed(runtime, collection, report.places.to_json() if report.places is not None else None)
        runtime.mark_written(collection)  # this process's registries re-read their places at once
    return report
