"""`offtopic` eval section: every off-topic message must be refused, no on-topic one.

refusal_rate over the section's messages; false_refusal_rate over the `retrieval`
questions of the same file (a refused real question is the costlier mistake). Between the two,
what an answer's first line says: noted_rate, the `retrieval` questions answered under "this may
be outside what our documents cover" (a doubtful route without a model), and plain_rate, the
section's messages answered without that note. Routing goes through the real router: the router
model when one is configured, the LLM-free pre-filter otherwise.
"""

from __future__ import annotations

from typing import Any



async def evaluate(items: list[dict], run: Any) -> dict[str, Any]:
    service = run.service
    failures: list[str] = []
    refused = plain = 0
    for item in items:
        route = await service.route(str(item["question"]))
        if route.name == "offtopic":
            refused += 1
        else:
            failures.append(str(item["id"]))
            plain += not getattr(route, "borderline", False)
    on_topic = [q for q in run.data.get("retrieval") or [] if q.get("question")]
    false_refusals = noted = 0
    for item in on_topic:
        route = await service.route(str(item["question"]))
        if route.name == "offtopic":
            false_refusals += 1
            failures.append(str(item["id"]))
        else:
            noted += bool(getattr(route, "borderline", False))
    n = len(items)
    return {
        "refusal_rate": round(refused / n, 4) if n else 0.0,
        "false_refusal_rate": round(false_refusals / len(on_topic), 4) if on_topic else 0.0,
        "noted_rate": round(noted / len(on_topic), 4) if on_topic else 0.0,
        "plain_rate": round(plain / n, 4) if n else 0.0,
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
        f"({result['router']}); under the 'may be outside our documents' note: "
        f"{result.get('noted_rate', 0.0):.0%} of the retrieval questions; answered without it: "
        f"{result.get('plain_rate', 0.0):.0%} of the messages"
    )
    if result["failures"]:
        line += "\n  failures: " + ", ".join(result["failures"])
    return line
