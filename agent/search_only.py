"""Answers without an LLM: the best passages (or facility results) with their sources.

Used when no provider is configured, so askdesk stays useful out of the box and the user
sees exactly what a model would have been given.
"""

from __future__ import annotations

from typing import Any

from agent.prompts import PromptSet
from agent.tools.base import ToolResult

PASSAGE_CHARS = 350
MAX_PASSAGES = 5


def _excerpt(text: str, limit: int = PASSAGE_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut + "…"


def knowledge_answer(result: ToolResult | None, prompts: PromptSet) -> str:
    passages: list[dict[str, Any]] = result.data if result is not None and isinstance(result.data, list) else []
    if not passages:
        return prompts.render("search_only_empty")
    weak = result is not None and result.weak_evidence
    lines = [prompts.render("search_only_weak" if weak else "search_only_header")]
    for i, p in enumerate(passages[:MAX_PASSAGES], start=1):
        where = p.get("title") or p.get("source", "")
        if p.get("section"):
            where += f" — {p['section']}"
        lines.append(f"\n{i}. {_excerpt(p.get('text', ''))}\n   (source: {where})")
    return "\n".join(lines)


def facility_answer(result: ToolResult | None, prompts: PromptSet) -> str:
    if result is None or not result.text.strip():
        return prompts.render("search_only_empty")
    return result.text.strip()
