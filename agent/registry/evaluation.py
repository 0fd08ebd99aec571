"""`askdesk eval` section named after a registry: requests with their exact expected results.

Each item `{id, query, expected: [record id, ...]}` runs through the same parser and search as
the registry's command and passes when the returned set (up to the query's limit: 10 by
default, every match when the query asks for "all") equals `expected`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.registry.command import CommandRunner

if TYPE_CHECKING:
    from agent.registry.registry import Registry


class RegistryEvalSection:
    def __init__(self, registry: "Registry") -> None:
        self.registry = registry

    async def evaluate(self, items: list[dict], service: Any = None) -> dict[str, Any]:
        """`service` is unused: the section searches the registry it belongs to."""
        registry = self.registry
        if items and not (await registry.places()).exists:
            return {"skipped": f"{registry.decl.record.singular} registry not loaded (no collection "
                               f"'{registry.collection}'): run askdesk registry ingest {registry.name} FILE.csv first"}
        failures: list[dict[str, Any]] = []
        passed = 0
        for i, item in enumerate(items):
            expected = {str(x) for x in item.get("expected") or []}
            result, results = await CommandRunner(registry).run(str(item.get("query", "")))
            got = {r.id for r in result.records}
            if got == expected:
                passed += 1
                continue
            failures.append({
                "id": str(item.get("id", i + 1)),
                "query": item.get("query", ""),
                "interpretation": result.summary,
                "missing": sorted(expected - got),
                "extra": sorted(got - expected),
                "message": results.message if results else result.reply,
            })
        n = len(items)
        return {"exact_match": round(passed / n, 4) if n else 0.0, "n": n, "passed": passed, "failures": failures}

    def render(self, result: dict[str, Any]) -> str:
        name = self.registry.name
        if "skipped" in result:
            return f"{name}: skipped — {result['skipped']}"
        lines = [f"{name}: exact match {result['passed']}/{result['n']} ({result['exact_match']:.0%})"]
        for f in result["failures"]:
            lines.append(f"  ✗ {f['id']}: {f['query']!r} read as [{f['interpretation']}]")
            if f["missing"]:
                lines.append(f"      missing: {', '.join(f['missing'])}")
            if f["extra"]:
                lines.append(f"      extra:   {', '.join(f['extra'])}")
            if f.get("message"):
                lines.append(f"      note:    {f['message']}")
        return "\n".join(lines)
