"""`askdesk eval FILE`: one module per section of the eval YAML.

A section module `agent.evaluation.<section>` exposes
    async def evaluate(items: list[dict], runtime: Runtime, *, top_k: int, eval_data: dict) -> dict
    def render(result: dict) -> str        # human-readable summary
`eval_data` is the whole file (offtopic needs the retrieval questions too).
Sections without a module are reported as skipped, never as errors.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import yaml

from agent.runtime import Runtime

SECTIONS = ["retrieval", "offtopic", "conversations", "facility", "routes"]


def load_eval_file(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    return data


def section_module(name: str):
    try:
        return importlib.import_module(f"agent.evaluation.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"agent.evaluation.{name}":
            raise
        return None


async def run_eval(path: Path, runtime: Runtime, *, top_k: int = 5) -> dict[str, Any]:
    data = load_eval_file(path)
    results: dict[str, Any] = {}
    for name, items in data.items():
        module = section_module(name) if name in SECTIONS else None
        if module is None:
            results[name] = {"skipped": "section not supported by this build"}
            continue
        results[name] = await module.evaluate(items or [], runtime, top_k=top_k, eval_data=data)
    return results
