"""`offtopic` eval section: every off-topic message must be refused, no on-topic one.

refusal_rate over the section's messages; false_refusal_rate over the `retrieval`
questions of the same file (a refused real question is the costlier mistake). Routing
goes through the real router: the router model when one is configured, the LLM-free
pre-filter otherwise.
"""

from __future__ import annotations

from typing import Any



async def evaluate(items: list[dict], run: Any) -> dict[str, Any]:
    service = run.service
    failures: list[str] = []
    refused = 0
    for item in items:
        route = await service.route(str(item["question"]))
        if route.name == "offtopic":
            refused += 1
        else:
            failures.append(str(item["id"]))
    on_topic = [q for q in run.data.get("retrieval") or [] if q.get("question")]
    false_refusals = 0
    for item in on_topic:
        route = await service.route(str(item["question"]))
        if route.name == "offtopic":
            false_refusals += 1
            failures.append(str(item["id"]))
    n = len(items)
    return {
        "refusal_rate": round(refused / n, 4) if n else 0.0,
        "false_refusal_rate": round(false_refusals / len(on_topic), 4) if on_topic else 0.0,
        "n": n,
        "n_on_topic": len(on_topic),
        "router": "model" if service.models.router is not None else "pre-filter",
        "failures": failures,
    }


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"offtopic: skipped ({result['skipped']})"
    line = (
        f"offtopic: refusal rate {result['refusal_rate']:.0%} over {result['n']} messages, "
        f"false refusals {result['false_refusal_rate']:.0%} over {result['n_on_topic']} retrieval questions "
        f"({result['router']})"
    )
    if result["failures"]:
        line += "\n  failures: " + ", ".join(result["failures"])
    return line
