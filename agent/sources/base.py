"""The seam every knowledge source implements, and the shapes it hands to the sync engine.

A source only *lists* what it holds (or what changed since a cursor it gave last time) and
*reads* one document. The sync engine (agent/sources/sync.py) owns the rest: cursors,
resuming after a crash, atomic swaps of a document's chunks, audiences on every chunk,
back-off (through `agent/sources/http.py`), and the source's status for `askdesk sources`.

A new kind is one module with a `Source` subclass and `register(r)` calling `r.source(cls)`,
named in the `askdesk.plugins` entry-point group (agent/plugins.py).
"""

from __future__ import annotations

import os
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class SourceError(Exception):
    """The source cannot be listed or read right now. `str(exc)` is one line a person can act
    on ("Confluence answered 401: check CONFLUENCE_TOKEN"); the engine records it as the
    source's last error and keeps the last good copy searchable."""


class SourceConfig(BaseModel):
    """One entry of sources.yaml. A kind subclasses it with its own keys (`url`, `space`,
    `token_env`, …); secrets are never in the file, only the *names* of the environment
    variables that hold them."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$")
    kind: str
    # who may see what this source holds: Slack/Teams channel ids, user ids or emails;
    # "everyone" (the default), or "from_source" where the kind can read its permissions
    audience: list[str] | Literal["everyone", "from_source"] = "everyone"
    # how often `askdesk serve` syncs it; unset: ASKDESK_SYNC_INTERVAL
    interval_minutes: float | None = Field(default=None, gt=0)

    @field_validator("audience", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        if isinstance(value, str) and value not in ("everyone", "from_source"):
            return [value]
        return value


class Listed(BaseModel):
    """One document as a listing names it, before it is read."""

    ref: str  # stable id inside the source: survives renames and moves (a page id, a drive item id)
    version: str  # changes whenever the content does (an ETag, a version number, a modified time)
    title: str = ""
    url: str | None = None  # a link that opens it for a person
    path: str = ""  # where it lives, for people ("Space HR / Leave / Parental leave")
    deleted: bool = False  # a change feed's removal (or lost access)
    extra: dict[str, Any] = Field(default_factory=dict)  # what `read` needs again (a download URL, a mime type)


class Listing(BaseModel):
    """What `Source.changes` returns.

    `complete=True`: `documents` is everything the source holds now, so anything the engine
    stored that is not in it was deleted. `complete=False`: a change feed since `cursor`,
    where removals come as `deleted=True`. `cursor` is handed back on the next call; the engine
    saves it only after every change in this listing is in the index."""

    documents: list[Listed]
    complete: bool
    cursor: str | None = None


class Fetched(BaseModel):
    """A document's content. Exactly one of `data` (bytes, read by the file loaders according
    to `filename`'s suffix: .md, .html, .pdf, .docx, …) or `text` (Markdown already)."""

    filename: str = ""
    data: bytes | None = None
    text: str | None = None
    title: str = ""
    url: str | None = None
    audience: list[str] | None = None  # with `audience: from_source`: who the source lets read it
    # a heading's fragment id on the page (`{"Parental leave": "parental-leave"}`), so a citation
    # opens at its section; read from HTML headings' ids when the source gives none
    anchors: dict[str, str] = Field(default_factory=dict)


class Source:
    """Base class of a source kind. Override `changes` and `read`; the rest is optional."""

    kind: ClassVar[str] = ""
    config_class: ClassVar[type[SourceConfig]] = SourceConfig
    # environment variables a deployment must set for this kind (names of config keys ending
    # in `_env` are added per source by `missing_env`)
    required_env: ClassVar[tuple[str, ...]] = ()
    reads_audience: ClassVar[bool] = False  # supports `audience: from_source`

    def __init__(self, config: SourceConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return self.config.name

    async def changes(self, cursor: str | None) -> Listing:
        """What the source holds (cursor None: everything) or what changed since `cursor`."""
        raise NotImplementedError

    async def read(self, item: Listed) -> Fetched:
        """One listed document's content. Raise `SourceError` for this document only when it
        cannot be read (it is reported and skipped; the rest of the sync goes on)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release clients and connections."""

    @classmethod
    def env_variables(cls) -> list[str]:
        return list(cls.required_env)

    @classmethod
    def missing_env(cls) -> list[str]:
        return [name for name in cls.required_env if not os.environ.get(name)]

    def secret(self, env_name: str | None, what: str) -> str:
        """The value of the variable a config key names (`token_env: CONFLUENCE_TOKEN`)."""
        if not env_name:
            raise SourceError(f"source {self.name!r}: no {what} variable is named ({what}_env: …)")
        value = os.environ.get(env_name, "")
        if not value:
            raise SourceError(f"source {self.name!r}: {env_name} is not set ({what})")
        return value


def heading_anchors(fetched: Fetched) -> dict[str, str]:
    """The ids of an HTML page's headings (`<h2 id="pay">Pay</h2>`, or an `<a id/name>` inside
    one), by heading text: a citation then opens at its section."""
    name = (fetched.filename or "").lower()
    if fetched.data is None or not name.endswith((".html", ".htm", ".xhtml")):
        return {}
    from bs4 import BeautifulSoup

    anchors: dict[str, str] = {}
    for heading in BeautifulSoup(fetched.data, "html.parser").find_all(["h1", "h2", "h3", "h4", "h5", "h6"]):
        inner = heading.find("a", attrs={"id": True}) or heading.find("a", attrs={"name": True})
        anchor = heading.get("id") or (inner.get("id") or inner.get("name") if inner else None)
        text = " ".join(heading.get_text(" ").split())
        if anchor and text and text not in anchors:
            anchors[text] = str(anchor)
    return anchors
