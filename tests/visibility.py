"""What search can see of a knowledge collection, file by file (the crash and interruption
tests assert on it): the points the search filter lets through, grouped by file and version."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from agent.knowledge import versions


@dataclass
class FileView:
    """One file's visible chunks, by version."""

    chunks: dict[str, list[dict]] = field(default_factory=lambda: defaultdict(list))

    @property
    def mixed(self) -> bool:
        return len(self.chunks) > 1

    @property
    def partial(self) -> bool:
        """Some version lacks chunks, or has one twice."""
        for payloads in self.chunks.values():
            indexes = sorted(p["chunk_index"] for p in payloads)
            if indexes != list(range(payloads[0]["n_chunks"])):
                return True
        return False

    @property
    def text(self) -> str:
        (payloads,) = self.chunks.values()
        return "\n".join(p["text"] for p in sorted(payloads, key=lambda p: p["chunk_index"]))

    @property
    def file_hash(self) -> str:
        (payloads,) = self.chunks.values()
        return payloads[0]["file_hash"]


async def visible_files(runtime, name: str = "kb") -> dict[str, FileView]:
    metadata = await runtime.store.collection_metadata(name)
    if metadata is None:
        return {}
    points, _ = await runtime.store.scroll(name, scroll_filter=versions.visible(None, metadata), limit=100_000,
                                           with_payload=True)
    files: dict[str, FileView] = defaultdict(FileView)
    for p in points:
        payload = p.payload or {}
        files[payload["source"]].chunks[payload.get(versions.VERSION) or "legacy:" + payload["file_hash"]].append(
            payload)
    return dict(files)


async def hidden_left(runtime, name: str = "kb") -> tuple[int, int]:
    """(hidden versions listed, points of hidden versions) — both 0 after a completed ingest."""
    metadata = await runtime.store.collection_metadata(name) or {}
    listed = sorted(versions.hidden(metadata))
    total = await runtime.store.count(name)
    seen = await runtime.store.count(name, versions.visible(None, metadata))
    return len(listed), total - seen
