"""Answers without an LLM: the best passages (or facility results) with their sources.

Used when no provider is configured, so askdesk stays useful out of the box and the user
sees exactly what a model would have been given.
"""

from __future__ import annotations

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
    if result is None or not result.passages:
        return prompts.render("search_only_empty")
    lines = [prompts.render("search_only_weak" if result.weak_evidence else "search_only_header")]
    for i, p in enumerate(result.passages[:MAX_PASSAGES], start=1):
        where = p.title or p.source
        if p.section:
            where += f" — {p.section}"
        lines.append(f"\n{i}. {_excerpt(p.text)}\n   (source: {where})")
    return "\n".join(lines)


def facility_answer(result: ToolResult | None, prompts: PromptSet) -> str:
    if result is None or not result.text.strip():
        return prompts.render("search_only_empty")
    return result.text.strip()
