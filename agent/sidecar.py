"""Files a process keeps beside the store about a collection (its statistics, a registry's
places): one file per store, collection and kind under `<data dir>/statistics/`, private (0600);
the JSON ones are written atomically (a reader sees the old file or the new one, never half)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent.private import private_dir, private_file

if TYPE_CHECKING:
    from agent.runtime import Runtime


def path(runtime: "Runtime", collection: str, kind: str, ext: str = "json") -> Path:
    """The embedded store and a Qdrant server at a URL are different stores: different files."""
    settings = runtime.settings
    store = "edge" if not settings.qdrant_url else "server-" + _slug(settings.qdrant_url)
    return Path(settings.data_dir) / "statistics" / f"{store}--{_slug(collection)}.{kind}.{ext}"


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)[:120]


def load(runtime: "Runtime", collection: str, kind: str) -> dict[str, Any] | None:
    try:
        data = json.loads(path(runtime, collection, kind).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save(runtime: "Runtime", collection: str, kind: str, data: dict[str, Any]) -> None:
    target = path(runtime, collection, kind)
    private_dir(target.parent)
    temp = private_file(target.with_suffix(f".{os.getpid()}.tmp"))
    temp.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
    os.replace(temp, target)
