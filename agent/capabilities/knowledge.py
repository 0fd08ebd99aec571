"""The knowledge base as a capability: the `get_formatted_context` tool over one collection,
its search before the first model call, and its search-only answer (the best passages with
their sources, exactly what a model would have been given).

Bound to one knowledge collection (a Slack channel may use another: `slack_channel_collections`).
It claims no message by its wording: whether a message is for the documents is decided by
meaning (agent/understanding/gate.py), and everything no registry claims is theirs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent.capabilities.base import Capability, EvalSection, Found, SearchOnly
from agent.knowledge.search import Passage
from agent.references import Reference
from agent.tools.base import Tool, ToolResult
from agent.tools import formatted_context
from agent.tools.formatted_context import MAX_TOP_K, make_tool

if TYPE_CHECKING:
    from agent.knowledge.vocabulary import Vocabulary
    from agent.prompts import PromptSet
    from agent.plugins import Registrar
    from agent.providers.base import Model
    from agent.runtime import Runtime

TOOL = "get_formatted_context"
PASSAGE_CHARS = 350  # of each passage in a search-only answer
MAX_PASSAGES = 5


def passages(found: Found | None) -> list[Passage]:
    """The passages a knowledge search found (none in another tool's result, such as an action's)."""
    data = found.result.data if found is not None else None
    return [p for p in data if isinstance(p, Passage)] if isinstance(data, list) else []


def best_score(found: Found | None) -> float | None:
    """The best dense similarity of what was found to its query (None: nothing to judge by)."""
    scores = [p.dense_score for p in passages(found) if p.dense_score is not None]
    return max(scores) if scores else None


def best_centered(found: Found | None) -> float | None:
    """The best centered similarity of what was found (the off-topic gate's evidence;
    agent/knowledge/calibration.py), None before the collection is calibrated."""
    scores = [p.centered_score for p in passages(found) if p.centered_score is not None]
    return max(scores) if scores else None


def excerpt(text: str, limit: int = PASSAGE_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + "…"


def shown(result: ToolResult | None) -> list[tuple[Reference, list[Passage]]]:
    """The passages a search-only answer shows, grouped by the source they cite (file and
    section) in order of first appearance: entry i is source i of the answer's references."""
    groups: dict[tuple[str, str], tuple[Reference, list[Passage]]] = {}
    data = result.data if result is not None and isinstance(result.data, list) else []
    for p in [p for p in data if isinstance(p, Passage)][:MAX_PASSAGES]:
        groups.setdefault((p.source, p.section), (formatted_context.reference_of(p), []))[1].append(p)
    return list(groups.values())


def knowledge_answer(result: ToolResult | None, prompts: "PromptSet") -> str:
    """The best passages with where each comes from (no model), numbered as their sources are:
    passages from the same source and section share one entry."""
    entries = shown(result)
    if not entries:
        return prompts.render("search_only_empty")
    lines = [prompts.render("search_only_weak" if result.weak_evidence else "search_only_header")]  # type: ignore[union-attr]
    for i, (ref, found) in enumerate(entries, start=1):
        where = ref.title or ref.source
        if ref.section:
            where += f" — {ref.section}"
        text = "\n   ".join(excerpt(p.text) for p in found)
        lines.append(f"\n{i}. {text}\n   (source: {where})")
    return "\n".join(lines)


class KnowledgeCapability(Capability):
    name = "knowledge"
    kind = "knowledge"
    description = ("a question the organisation's documents could answer (policies, eligibility, rates, payments, "
                   "reports, plans, programs, procedures), in any language, even when terse or full of the "
                   "documents' own abbreviations and codes.")

    def __init__(self, runtime: "Runtime", collection: str | None = None) -> None:
        super().__init__(runtime)
        self.collection = collection  # None: the default collection (settings.collection)
        self._tool = make_tool(runtime, collection=collection)

    def tools(self) -> list[Tool]:
        return [self._tool]

    def bound(self, collection: str | None) -> "KnowledgeCapability":
        return self if collection == self.collection else KnowledgeCapability(self.runtime, collection)

    async def unplaced(self, text: str) -> str:
        return text

    async def warm(self) -> None:
        from agent.knowledge.search import search

        await self.vocabulary()
        # the embedder loaded and the index read from disk: the first question pays neither
        await search(self.runtime, "warm up", top_k=1, collection=self.collection)

    def arguments(self, query: str) -> dict[str, Any]:
        return {"query": query, "top_k": min(self.runtime.settings.top_k, MAX_TOP_K)}

    async def search(self, query: str, also: tuple[tuple[str, float], ...] = ()) -> Found:
        """The tool's search for `query` (fused with `also`: a message in its thread's context);
        raises KnowledgeBaseUnavailable when the store is down."""
        arguments = self.arguments(query)
        result = await formatted_context.get_formatted_context(self.runtime, query, arguments["top_k"], collection=self.collection,
                                             also=list(also))
        return Found(self.name, TOOL, arguments, result, query)

    async def prefetch(self, query: str, *, model: "Model | None" = None) -> Found:
        return await self.search(query)

    def search_only(self, found: Found | None, prompts: "PromptSet") -> SearchOnly:
        result = found.result if found is not None else None
        # the references are the entries' sources, in the same order: "3." in the text is source 3
        return SearchOnly(text=knowledge_answer(result, prompts), references=[ref for ref, _ in shown(result)])

    async def vocabulary(self) -> "Vocabulary":
        from agent.knowledge.vocabulary import vocabulary

        return await vocabulary(self.runtime, self.collection)

    def eval_sections(self) -> dict[str, EvalSection]:
        from agent.evaluation import conversations, retrieval

        return {"retrieval": retrieval.Section(), "conversations": conversations.Section()}


def register(r: "Registrar") -> None:
    """askdesk's own knowledge base, registered as any capability plug-in is (pyproject.toml)."""
    r.capability(KnowledgeCapability)
