"""The registries of a deployment: the declarations listed in `ASKDESK_REGISTRIES` and those in
`<data_dir>/registries/*.yaml` (where `askdesk registry ingest --declaration` puts a copy).

A broken or conflicting declaration stops start-up with one line naming the file and the key.
Two copies of one declaration (the same content) count once. The engine's modules are imported
inside the functions: a process that only asks whether any registry is declared
(`declaration_paths`, e.g. `askdesk ask` on a knowledge base alone) never loads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.registry.declaration import Declaration
    from agent.registry.gazetteer import Gazetteer
    from agent.registry.registry import Registry
    from agent.runtime import Runtime

REGISTRIES_DIR = "registries"  # under the data dir


def registries_dir(settings: "Settings") -> Path:
    return Path(settings.data_dir) / REGISTRIES_DIR


def declaration_paths(settings: "Settings") -> list[Path]:
    listed = [Path(p) for p in settings.registries]
    found = sorted(registries_dir(settings).glob("*.yaml")) if registries_dir(settings).is_dir() else []
    return [*listed, *found]


def load_declarations(settings: "Settings") -> list[Declaration]:
    """Every declared registry, validated (DeclarationError: one line naming the file and key)."""
    from agent.registry.declaration import DeclarationError, load_declaration

    out: dict[str, "Declaration"] = {}
    texts: dict[str, str] = {}
    for path in declaration_paths(settings):
        if not path.is_file():
            raise DeclarationError(f"{path}: no such registry declaration (listed in ASKDESK_REGISTRIES)")
        decl = load_declaration(path)
        text = path.read_text(encoding="utf-8")
        if decl.name in out:
            if texts[decl.name] == text:
                continue  # the same declaration twice (e.g. listed and copied into the data dir)
            raise DeclarationError(f"{path}: registry '{decl.name}' is already declared by {out[decl.name].path}")
        out[decl.name], texts[decl.name] = decl, text
    commands = {}
    for decl in out.values():
        if decl.command.name in commands:
            raise DeclarationError(f"{decl.path}: command '{decl.command.name}' is already "
                                   f"registry '{commands[decl.command.name]}''s")
        commands[decl.command.name] = decl.name
    return list(out.values())


def build_registries(runtime: "Runtime", declarations: list[Declaration] | None = None) -> list[Registry]:
    """One `Registry` per declaration over `runtime`, sharing the language words and gazetteers."""
    from agent.registry.registry import Registry
    from agent.registry.words import load_generic_words

    declarations = load_declarations(runtime.settings) if declarations is None else declarations
    words = load_generic_words()
    gazetteers: dict[tuple, "Gazetteer"] = {}
    out = []
    for decl in declarations:
        registry = Registry(decl, runtime, words=words)
        if registry.gazetteer is not None:
            registry.gazetteer = gazetteers.setdefault(registry.gazetteer.signature(), registry.gazetteer)
        out.append(registry)
    return out


def find_declaration(settings: "Settings", name: str) -> Declaration:
    """The deployment's registry `name` (DeclarationError when none or a broken one)."""
    from agent.registry.declaration import DeclarationError

    declarations = load_declarations(settings)
    for decl in declarations:
        if decl.name == name:
            return decl
    known = ", ".join(d.name for d in declarations) or "none"
    raise DeclarationError(f"no registry named '{name}' is declared (declared: {known}); give its declaration with "
                           f"--declaration FILE.yaml, or list it in ASKDESK_REGISTRIES")
