"""Answers without an LLM: the best passages (or facility results) with their sources.

Used when no provider is configured, so askdesk stays useful out of the box and the user
sees exactly what a model would have been given.
"""

from __future__ import annotations

from typing import Any

from agent.answers import AnswerResult
from agent.turn.loop import Prefetched
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


def answer(prefetched: list[Prefetched], prompts: PromptSet, *, route: str, notice: str | None,
           **common: Any) -> AnswerResult:
    """The turn's answer without an agent model: what the route's prefetch found, with its sources."""
    first = prefetched[0].result if prefetched else None
    if route == "facility":
        text, references = facility_answer(first, prompts), first.references if first else []
    else:
        text = knowledge_answer(first, prompts)
        references = first.references[:MAX_PASSAGES] if first else []
    return AnswerResult(answer=text, references=list(references), search_only=True, notice=notice,
                        tool_calls=[p.name for p in prefetched], facilities=first.facilities if first else [],
                        route=route, **common)
