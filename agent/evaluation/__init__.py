"""`askdesk eval FILE`: score a build against the sections of an eval YAML.

The understanding layer scores `offtopic` and `routes`; every other section belongs to a
capability (`retrieval` and `conversations` to the knowledge base, a registry's section to
that registry: `Capability.eval_sections()`). A section object has
    async def evaluate(items: list[dict], run: EvalRun) -> dict
    def render(result: dict) -> str
Sections nobody scores are reported as skipped, never as errors. Everything runs through one
`Askdesk` service with an in-memory conversation store and the configured models.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any


from agent.evaluation import offtopic, routes, unanswerable
from agent.yamlio import safe_load


@dataclass
class EvalRun:
    service: Any  # agent.turn.service.Askdesk
    top_k: int
    data: dict[str, Any]  # the whole file (offtopic scores the retrieval questions too)


class _Core:
    def __init__(self, module) -> None:
        self.module = module

    async def evaluate(self, items: list[dict], run: EvalRun) -> dict[str, Any]:
        return await self.module.evaluate(items, run)

    def render(self, result: dict[str, Any]) -> str:
        return self.module.render(result)


CORE_SECTIONS = {"offtopic": _Core(offtopic), "routes": _Core(routes), "unanswerable": _Core(unanswerable)}


def load_eval_file(path: Path) -> dict[str, Any]:
    data = safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    return data


def sections(service) -> dict[str, Any]:
    """Every section this deployment scores, by name."""
    found: dict[str, Any] = dict(CORE_SECTIONS)
    for capability in service.capabilities():
        found.update(capability.eval_sections())
    return found


async def run_eval(path: Path, service, *, top_k: int = 5) -> dict[str, Any]:
    data = load_eval_file(path)
    known = sections(service)
    run = EvalRun(service=service, top_k=top_k, data=data)
    results: dict[str, Any] = {}
    for name, items in data.items():
        section = known.get(name)
        if section is None:
            results[name] = {"skipped": "no capability of this deployment scores this section"}
            continue
        results[name] = await section.evaluate(items or [], run)
    results["calibration"] = await calibration_report(service)
    return results


async def calibration_report(service) -> dict[str, Any]:
    """The off-topic gate's calibration of the collection the scores came from (what "on
    topic" looked like for it), so a score is read with the state it was measured in."""
    from agent.knowledge import calibration

    runtime = service.runtime
    collection = runtime.settings.collection
    try:
        stored, version = await calibration.stored(runtime, collection)
        if stored is None or stored.content_version != version:
            stored = await calibration.refresh(runtime, collection)
    except Exception as exc:  # an empty or unreachable collection: the scores say so already
        return {"unavailable": f"{type(exc).__name__}: {exc}"}
    return {"collection": collection, **stored.summary()}


def render_calibration(result: dict[str, Any]) -> str:
    if "unavailable" in result:
        return f"unavailable ({result['unavailable']})"
    margin = result.get("examples_margin") or {}
    return (f"collection {result['collection']!r}: {result['chunks']} passages measured against the off-topic "
            f"examples ({result['examples_set_aside']} set aside as too close to these documents); examples' "
            f"margin p10 {margin.get('p10', float('nan')):+.3f}, p25 {margin.get('p25', float('nan')):+.3f}, "
            f"p50 {margin.get('p50', float('nan')):+.3f}")


def render(service, results: dict[str, Any]) -> dict[str, str]:
    """Each section's summary text."""
    known = sections(service)
    out = {}
    for name, result in results.items():
        if name == "calibration" and name not in known:
            out[name] = render_calibration(result)
        elif "skipped" in result or name not in known:
            out[name] = f"skipped ({result.get('skipped', 'not scored')})"
        else:
            out[name] = known[name].render(result)
    return out
