"""`kind: folder`: a directory of files, as `askdesk ingest` reads it, kept in sync.

Every listing is complete (a folder is cheap to walk): a file's version is its size and
modification time, so an unchanged file is neither read nor embedded again; a file that is gone
is removed. The ref is the path relative to the folder, so a renamed file is a removal and an
addition (its chunks come from the embedding cache, not the embedder). `url_base`, when set,
turns the relative path into a link (a file share or an intranet that serves the folder)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import quote

from pydantic import Field

from agent.sources.base import Fetched, Listed, Listing, Source, SourceConfig, SourceError


class FolderConfig(SourceConfig):
    kind: str = "folder"
    path: Path
    url_base: str | None = Field(None, description="prefix that makes a file's relative path a link")


class FolderSource(Source):
    kind = "folder"
    config_class = FolderConfig

    async def changes(self, cursor: str | None) -> Listing:
        from agent.knowledge.ingest import discover  # the ingest machinery loads when a sync runs

        config: FolderConfig = self.config  # type: ignore[assignment]
        root = config.path.expanduser()
        if not root.is_dir():
            raise SourceError(f"source {self.name!r}: {root} is not a folder")
        files, _problems = await asyncio.to_thread(discover, [root])
        documents = []
        for path, relative in files:
            info = path.stat()
            url = f"{config.url_base.rstrip('/')}/{quote(relative)}" if config.url_base else None
            documents.append(Listed(ref=relative, version=f"{info.st_size}:{info.st_mtime_ns}", title="",
                                    url=url, path=relative, extra={"file": str(path)}))
        return Listing(documents=documents, complete=True)

    async def read(self, item: Listed) -> Fetched:
        from agent.knowledge.loaders import read_regular_file

        try:
            data = await asyncio.to_thread(read_regular_file, Path(item.extra["file"]))
        except OSError as exc:
            raise SourceError(f"{item.path}: {exc.strerror or exc}") from exc
        return Fetched(filename=item.path, data=data, url=item.url)


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.source(FolderSource)
