"""Messages of the admin channel: one JSON object per line.

Client -> server: one `JobRequest`. Server -> client: any number of progress `Event`s
(`files_found`, `chunks_found`, `file_done`, `chunks_done`), then one `JobOutput` line
(`event: "output"`): what the command prints and its exit code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class JobRequest(BaseModel):
    op: Literal["ingest", "registry-ingest", "learned-remove", "learned-confirm", "learned-expire", "sync"]
    paths: list[str] = Field(default_factory=list)  # absolute, as the client resolved them
    collection: str | None = None
    registry: str | None = None  # registry-ingest: the registry's name
    declaration: str | None = None  # registry-ingest: its declaration (absolute path), as the client read it
    prune: bool = False
    full: bool = False  # sync: list everything again
    as_json: bool = False


class Event(BaseModel):
    event: str
    value: Any = None


class JobOutput(BaseModel):
    event: Literal["output"] = "output"
    stdout: list[str] = Field(default_factory=list)
    stderr: list[str] = Field(default_factory=list)
    code: int = 0
