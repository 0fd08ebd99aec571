"""File versions: search sees each file wholly old or wholly new, even after a kill -9.

Every chunk carries `version`, a fresh id each time a file is written. The collection's
metadata lists the versions search must not see, one key per version (`hidden:<version>` ->
{source, state, since}); searches read it and exclude those versions (`visible`). A file is
replaced in five steps, each one atomic on Qdrant Edge and on a Qdrant server (one metadata
update, or one point operation):

1. `hide_pending`: the new version is listed hidden ("pending") before any of its chunks exist;
2. its chunks are upserted (invisible);
3. `switch`: one metadata update un-hides the new version and hides the old ones ("superseded"):
   the file's new chunks appear together and its old ones disappear in the same step;
4. the superseded points are deleted;
5. `forget`: their keys are removed.

A crash before 3 leaves the old version visible and an invisible pending one; after 3, the new
version visible and an invisible superseded one. `recover` deletes those leftovers (at the
start of the next ingest). The hidden list is empty between ingests, so a search adds no
filter at all; during one it holds a version or two. Each step that changes the record waits
for in-process searches that read the previous one (agent/store/readers.py).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

import agent.store.models as models

if TYPE_CHECKING:
    from agent.runtime import Runtime

VERSION = "version"  # the payload field
HIDDEN = "hidden:"  # metadata key prefix
# On a shared server another process may be writing a pending version right now; one this old
# is a crashed ingest's leftover. (The embedded store has one writer: any pending is a leftover.)
STALE_PENDING_SECONDS = 6 * 3600

State = Literal["pending", "superseded"]


@dataclass(frozen=True)
class Hidden:
    version: str
    source: str
    state: State
    since: float


def new_version() -> str:
    return uuid.uuid4().hex[:16]


def legacy_version(source: str, file_hash: str) -> str:
    """The version given to chunks written before versions existed (deterministic: a crash
    while adopting them and a second try give the same id)."""
    return "legacy-" + hashlib.sha256(f"{source}\x00{file_hash}".encode()).hexdigest()[:16]


def hidden(metadata: dict[str, Any] | None) -> dict[str, Hidden]:
    out: dict[str, Hidden] = {}
    for key, value in (metadata or {}).items():
        if key.startswith(HIDDEN) and isinstance(value, dict):
            version = key[len(HIDDEN):]
            out[version] = Hidden(version, str(value.get("source", "")), value.get("state", "pending"),
                                  float(value.get("since", 0.0)))
    return out


def visible(flt: models.Filter | None, metadata: dict[str, Any] | None) -> models.Filter | None:
    """`flt` narrowed to the chunks search may see (unchanged when nothing is hidden)."""
    versions = sorted(hidden(metadata))
    if not versions:
        return flt
    exclude = models.FieldCondition(key=VERSION, match=models.MatchAny(any=versions))
    if flt is None:
        return models.Filter(must_not=[exclude])
    flt = models.neutral(flt)
    must_not = flt.must_not if isinstance(flt.must_not, list) else ([flt.must_not] if flt.must_not else [])
    return replace(flt, must_not=[*must_not, exclude])


def _entry(source: str, state: State) -> dict[str, Any]:
    return {"source": source, "state": state, "since": round(time.time(), 3)}


async def _write(runtime: "Runtime", name: str, patch: dict[str, Any]) -> None:
    if patch:
        await runtime.store.update_metadata(name, patch)
        await runtime.readers.advance()


async def hide_pending(runtime: "Runtime", name: str, source: str, version: str,
                       deleted: Sequence[str] = ()) -> None:
    """List `version` as pending; keys of versions already `deleted` go in the same write."""
    patch: dict[str, Any] = {HIDDEN + v: None for v in deleted}
    patch[HIDDEN + version] = _entry(source, "pending")
    await _write(runtime, name, patch)


async def switch(runtime: "Runtime", name: str, source: str, new: str | None, old: Sequence[str]) -> None:
    """Show `new` and hide `old` in one update (`new=None`: the file goes away)."""
    patch: dict[str, Any] = {HIDDEN + v: _entry(source, "superseded") for v in old}
    if new is not None:
        patch[HIDDEN + new] = None
    await _write(runtime, name, patch)


async def forget(runtime: "Runtime", name: str, versions: Sequence[str]) -> None:
    await _write(runtime, name, {HIDDEN + v: None for v in versions})


def selector(source: str, versions: Sequence[str]) -> models.Filter:
    """The points of `versions` of `source`."""
    return models.Filter(must=[
        models.FieldCondition(key="source", match=models.MatchValue(value=source)),
        models.FieldCondition(key=VERSION, match=models.MatchAny(any=list(versions))),
    ])


async def adopt_legacy(runtime: "Runtime", name: str, source: str, file_hash: str) -> str:
    """Give chunks written before versions existed their version, so they can be hidden."""
    version = legacy_version(source, file_hash)
    await runtime.store.set_payload(name, {VERSION: version}, models.Filter(
        must=[models.FieldCondition(key="source", match=models.MatchValue(value=source)),
              models.FieldCondition(key="file_hash", match=models.MatchValue(value=file_hash)),
              models.IsEmptyCondition(is_empty=models.PayloadField(key=VERSION))],
    ))
    return version


async def recover(runtime: "Runtime", name: str, metadata: dict[str, Any] | None) -> int:
    """Delete what an interrupted ingest left hidden; the number of versions removed."""
    now = time.time()
    gone = []
    for item in hidden(metadata).values():
        leftover = (item.state == "superseded" or runtime.store.exclusive
                    or now - item.since > STALE_PENDING_SECONDS)
        if leftover:
            await runtime.store.delete_where(name, selector(item.source, [item.version]))
            gone.append(item.version)
    await forget(runtime, name, gone)
    return len(gone)
