"""sources.yaml: which sources a deployment syncs (`ASKDESK_SOURCES`, default
`<data_dir>/sources.yaml`). Each entry is validated by its kind's own config class, so a typo
in a key is one clear line at start-up, naming the source."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from pydantic import ValidationError

from agent.sources.base import Source, SourceConfig
from agent.yamlio import safe_load

if TYPE_CHECKING:
    from agent.config import Settings


class SourcesFileError(Exception):
    """sources.yaml cannot be used; the message names the file, the source and the key."""


def sources_path(settings: "Settings") -> Path:
    return Path(settings.sources) if settings.sources else settings.data_dir / "sources.yaml"


def load_sources(settings: "Settings", kinds: dict[str, type[Source]] | None = None) -> list[Source]:
    """The sources the file declares, built by their kinds ([] when there is no file)."""
    if kinds is None:
        from agent.plugins import plugins

        kinds = plugins().sources
    path = sources_path(settings)
    if not path.is_file():
        if settings.sources:
            raise SourcesFileError(f"{path}: no such file (ASKDESK_SOURCES)")
        return []
    try:
        raw = safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise SourcesFileError(f"{path}: not valid YAML ({exc.__class__.__name__})") from exc
    entries = raw.get("sources") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise SourcesFileError(f"{path}: expected a top-level `sources:` list")
    built: list[Source] = []
    seen: set[str] = set()
    for i, entry in enumerate(entries, start=1):
        if not isinstance(entry, dict):
            raise SourcesFileError(f"{path}: source #{i} is not a mapping")
        name, kind = entry.get("name", f"#{i}"), entry.get("kind")
        cls = kinds.get(str(kind))
        if cls is None:
            known = ", ".join(sorted(kinds)) or "none loaded"
            raise SourcesFileError(f"{path}: source {name!r} has unknown kind {kind!r} (known: {known})")
        try:
            config = cls.config_class.model_validate(entry)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "entry"
            raise SourcesFileError(f"{path}: source {name!r}: {where}: {first['msg']}") from exc
        if config.name in seen:
            raise SourcesFileError(f"{path}: two sources are named {config.name!r}")
        if config.audience == "from_source" and not cls.reads_audience:
            raise SourcesFileError(f"{path}: source {config.name!r}: kind {kind!r} cannot read audiences "
                                   "from the service (audience: from_source); list them instead")
        seen.add(config.name)
        built.append(cls(config))
    return built


def config_fingerprint(config: SourceConfig) -> str:
    """What a sync depends on: a changed key starts that source over with a complete listing."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(config.model_dump(mode="json"), sort_keys=True).encode()).hexdigest()[:16]


def declared_audiences(settings: "Settings") -> tuple[list[str] | str, ...]:
    """Each declared source's `audience` as written (a list, "everyone" or "from_source"), read
    again only when sources.yaml changes: surfaces ask on every turn."""
    path = sources_path(settings)
    try:
        changed = path.stat().st_mtime_ns
    except OSError:
        return ()
    return _audiences(str(path), changed)


@lru_cache(maxsize=8)
def _audiences(path: str, changed: int) -> tuple[list[str] | str, ...]:
    try:
        raw = safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return ()
    entries = raw.get("sources") if isinstance(raw, dict) else None
    out: list[list[str] | str] = []
    for entry in entries if isinstance(entries, list) else []:
        audience = entry.get("audience") if isinstance(entry, dict) else None
        if isinstance(audience, str):
            out.append(audience if audience in ("everyone", "from_source") else [audience])
        elif isinstance(audience, list):
            out.append([str(a) for a in audience])
    return tuple(out)


def _names_a_person(key: str) -> bool:
    return "@" in key or key.startswith("domain:")


def audiences_name_people(settings: "Settings") -> bool:
    """Whether any declared source is limited to people (an email, a domain, or what the
    service shares): only then is an asker's email worth looking up (one API call per turn)."""
    return any(a == "from_source" or (isinstance(a, list) and any(map(_names_a_person, a)))
               for a in declared_audiences(settings))


def restricted_places(settings: "Settings") -> set[str]:
    """The channel and user ids some source's audience names: a place whose answers may draw on
    restricted documents (an expert's answer saved from there keeps that place's audience)."""
    return {key.split(";", 1)[0] for a in declared_audiences(settings) if isinstance(a, list)
            for key in a if key not in ("everyone", "from_source") and not _names_a_person(key)}
