"""Agent step replies for scripted models and the fake LLM server: one set of builders."""

from __future__ import annotations

from typing import Any


def tool_calls(*calls: tuple[str, dict[str, Any]]) -> dict:
    """A tool-calls step: (tool name, arguments) per call."""
    return {"step": {"kind": "tool_calls", "calls": [{"name": n, "arguments": a} for n, a in calls]}}


def search(*queries: str) -> dict:
    """A tool-calls step searching the knowledge base once per query."""
    return tool_calls(*(("get_formatted_context", {"query": q}) for q in queries))


def final(answer: str, *sources: str, confidence: float = 0.9, refs: list[dict] | None = None) -> dict:
    """A final-answer step citing `sources` (or the full `refs`)."""
    references = refs if refs is not None else [{"source": s} for s in sources]
    return {"step": {"kind": "final_answer", "answer": answer, "references": references, "confidence": confidence}}


def route(route: str, search_query: str | None = None, clarification: str | None = None) -> dict:
    """A router model decision."""
    out: dict[str, Any] = {"route": route}
    if search_query is not None:
        out["search_query"] = search_query
    if clarification is not None:
        out["clarification"] = clarification
    return out
