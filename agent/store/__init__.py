"""The vector store behind askdesk: Qdrant Edge embedded (default) or a Qdrant server.

`open_store(settings)` picks the backend: `ASKDESK_QDRANT_URL` set = `ServerStore` (shared by
any number of processes), else `EdgeStore` under `<data_dir>/edge/` (one process at a time:
`StoreInUse` names the holder). See docs/scaling.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.store.base import VectorStore
from agent.store.lock import StoreInUse

if TYPE_CHECKING:
    from agent.config import Settings

__all__ = ["StoreInUse", "VectorStore", "open_store"]


def open_store(settings: "Settings") -> VectorStore:
    if settings.qdrant_url:
        from agent.store.server import ServerStore

        return ServerStore.connect(settings.qdrant_url, settings.qdrant_api_key)
    from agent.store.edge import EdgeStore
    from agent.store.migrate import migrate_local_mode

    store = EdgeStore.open(settings.data_dir)
    migrate_local_mode(settings.data_dir, store)
    return store
