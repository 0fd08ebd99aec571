"""A child process for tests/test_sources_sync.py: syncs a folder source and is killed
(SIGKILL, by itself) while reading the document named in argv[3], mid-sync."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from agent.config import Settings
from agent.runtime import Runtime
from agent.sources.folder import FolderConfig, FolderSource
from agent.sources.sync import sync_all
from tests.crash_child import EMBEDDER, HashEmbedder


class DyingFolder(FolderSource):
    async def read(self, item):  # type: ignore[no-untyped-def]
        if item.ref == sys.argv[3]:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().read(item)


async def main() -> None:
    settings = Settings(data_dir=Path(sys.argv[1]), embedder=EMBEDDER, embedding_cache=False)
    runtime = Runtime.open(settings)
    runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    source = DyingFolder(FolderConfig(name="docs", kind="folder", path=Path(sys.argv[2])))
    import agent.sources.sync as sync

    sync.BATCH = 2
    await sync_all(runtime, sources=[source])


if __name__ == "__main__":
    asyncio.run(main())
