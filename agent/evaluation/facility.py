"""`askdesk eval` section `facility`: `/facility` queries with their exact expected results.

Each item `{id, query, expected: [operation_number, ...]}` runs through the same parser and
search as the `/facility` command and passes when the returned set (up to the query's limit:
10 by default, every match when the query asks for "all") equals `expected`.
"""

from __future__ import annotations

from typing import Any

from agent.facilities.command import run_facility_command
from agent.runtime import Runtime


class Section:
    """The `facility` section of the facility registry."""

    def __init__(self, capability) -> None:
        self.capability = capability

    async def evaluate(self, items: list[dict], run: Any) -> dict[str, Any]:
        return await evaluate(items, self.capability.runtime)

    def render(self, result: dict[str, Any]) -> str:
        return render(result)


async def evaluate(items: list[dict], runtime: Runtime) -> dict[str, Any]:
    collection = runtime.settings.facilities_collection
    if items and not await runtime.store.collection_exists(collection):
        return {"skipped": f"facility registry not loaded (no collection '{collection}'): "
                           "run askdesk ingest-facilities FILE.csv first"}
    failures: list[dict[str, Any]] = []
    passed = 0
    for i, item in enumerate(items):
        qid = str(item.get("id", i + 1))
        expected = {str(x) for x in item.get("expected") or []}
        result = await run_facility_command(runtime, str(item.get("query", "")))
        got_list = [h.operation_number for h in (result.results.facilities if result.results else [])]
        got = set(got_list)
        if got == expected:
            passed += 1
            continue
        failures.append({
            "id": qid,
            "query": item.get("query", ""),
            "interpretation": result.summary,
            "missing": sorted(expected - got),
            "extra": sorted(got - expected),
            "message": result.results.message if result.results else result.reply,
        })
    n = len(items)
    return {"exact_match": round(passed / n, 4) if n else 0.0, "n": n, "passed": passed, "failures": failures}


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"facility: skipped — {result['skipped']}"
    lines = [f"facility: exact match {result['passed']}/{result['n']} ({result['exact_match']:.0%})"]
    for f in result["failures"]:
        lines.append(f"  ✗ {f['id']}: {f['query']!r} read as [{f['interpretation']}]")
        if f["missing"]:
            lines.append(f"      missing: {', '.join(f['missing'])}")
        if f["extra"]:
            lines.append(f"      extra:   {', '.join(f['extra'])}")
        if f.get("message"):
            lines.append(f"      note:    {f['message']}")
    return "\n".join(lines)
