"""`conversations` eval section: retrieval recall of every turn of multi-turn threads.

Later turns only make sense with the earlier ones, so each turn is routed with the thread so
far and searched with the router's searches: the router model's rewrite when one is
configured; otherwise the message alone fused with the message in the thread's context
(agent/knowledge/fused.py), exactly as the router prefetches.
The thread holds each earlier question and the answer askdesk gives without an agent model
(its search-only answer: the passages found, with their sources), as a surface's history does.
A turn is a hit when every `must_contain` string occurs in the top-k passages (scored like
the retrieval section: `agent.evaluation.retrieval.hit_rank`).
"""

from __future__ import annotations

from typing import Any

from agent.capabilities.base import Found
from agent.evaluation.retrieval import hit_rank
from agent.knowledge.fused import search_fused
from agent.understanding.route import Clarify, Use
from agent.messages import ChatMessage
from agent.tools.base import ToolResult


class Section:
    """The `conversations` section of the knowledge capability."""

    async def evaluate(self, items: list[dict], run: Any) -> dict[str, Any]:
        return await evaluate(items, run.service, top_k=run.top_k)

    def render(self, result: dict[str, Any]) -> str:
        return render(result)


async def evaluate(items: list[dict], service: Any, *, top_k: int) -> dict[str, Any]:
    hits = 0
    n = 0
    failures: list[str] = []
    queries: dict[str, str] = {}
    for conv in items:
        history: list[ChatMessage] = []
        for turn_no, turn in enumerate(conv.get("turns") or [], start=1):
            n += 1
            question = str(turn["question"])
            route = await service.route(question, history)
            label = f"{conv['id']}#{turn_no}"
            match route:
                case Use(capability=capability, query=query, also=also) if capability.kind == "knowledge":
                    searches = [(query, 1.0), *also]  # the router's fused searches (a follow-up in its thread)
                case Clarify():  # asked back: what the documents hold for the message as written
                    searches = [(question, 1.0)]
                case _:
                    searches = []
            queries[label] = " || ".join(q for q, _ in searches) or question
            passages = await search_fused(service.runtime, searches, top_k=top_k) if searches else []
            if hit_rank(passages, list(turn.get("must_contain") or [])) is not None:
                hits += 1
            else:
                failures.append(label)
            history.append(ChatMessage(role="user", content=question))
            if passages:
                found = Found("knowledge", "get_formatted_context", {}, ToolResult(text="", data=passages))
                reply = service.context().knowledge.search_only(found, service.prompts).text
                history.append(ChatMessage(role="assistant", content=reply))
    return {
        f"recall@{top_k}": round(hits / n, 4) if n else 0.0,
        "n": n,
        "rewriter": "model" if service.models.router is not None else "heuristic",
        "failures": failures,
        "queries": queries,
    }


def render(result: dict[str, Any]) -> str:
    if "skipped" in result:
        return f"conversations: skipped ({result['skipped']})"
    key = next(k for k in result if k.startswith("recall@"))
    line = f"conversations: {key} {result[key]:.0%} over {result['n']} turns (rewrites: {result['rewriter']})"
    if result["failures"]:
        line += "\n  failures: " + ", ".join(result["failures"])
    return line
