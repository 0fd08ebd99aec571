"""`routes` eval section: does each message take the route it should?

Items: {id, question, route, thread?}, route one of knowledge / a registry's name / offtopic /
smalltalk / clarify; `thread` (optional) lists the user's earlier messages in the same thread.
The point is the lines the router draws: a question for the documents that names a place ("how
much does it cost in Houston?") against a search of a registry ("offices in Houston with
parking"), in every language, and inside a thread a follow-up against a new request
to decline. Routing goes through the real router (the router model when one is configured, the
LLM-free pre-filter otherwise).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from agent.messages import ChatMessage


async def evaluate(items: list[dict], run: Any) -> dict[str, Any]:
    service = run.service
    failures: list[str] = []
    confusion: Counter[str] = Counter()
    for item in items:
        thread = [ChatMessage(role="user", content=str(m)) for m in item.get("thread") or []]
        route = await service.route(str(item["question"]), thread)
        expected = str(item["route"])
        if route.name != expected:
            failures.append(f"{item['id']} ({expected} -> {route.name})")
            confusion[f"{expected} -> {route.name}"] += 1
    n = len(items)
    return {
        "accuracy": round((n - len(failures)) / n, 4) if n else 0.0,
        "n": n,
        "router": "model" if service.models.router is not None else "pre-filter",
        "confusion": dict(confusion),
        "failures": failures,
    }


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"routes: skipped ({result['skipped']})"
    line = f"routes: {result['accuracy']:.0%} of {result['n']} messages take the expected route ({result['router']})"
    if result["failures"]:
        line += "\n  failures: " + ", ".join(result["failures"])
    return line
