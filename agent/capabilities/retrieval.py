"""A turn's knowledge searches, each run once (the turn creates one `Retrieval` per question).

It lives with the knowledge capability so that classification (agent/understanding) and the
turn's stages both call down into it; nothing calls back up into the turn. Classification reads how close a message comes to the knowledge base from what this finds
(the message alone, or fused with its thread), and the answer reuses the same result as the
agent's prefetched context, so a question never searches the same thing twice.
"""

from __future__ import annotations

import logging

from agent.capabilities.base import Found
from agent.capabilities.knowledge import KnowledgeCapability
from agent.knowledge.search import KnowledgeBaseUnavailable
from agent.providers.base import Model
from agent.tracing import NOOP, Span

log = logging.getLogger(__name__)

Also = tuple[tuple[str, float], ...]


class Retrieval:
    def __init__(self, knowledge: KnowledgeCapability, span: Span = NOOP) -> None:
        self.knowledge = knowledge
        self.span = span
        self.model: Model | None = None  # translates the query into the other languages of the base, when set
        self._found: dict[tuple[str, Also], Found] = {}

    async def get(self, query: str, also: Also = ()) -> Found:
        """The search for `query` (fused with `also`); raises KnowledgeBaseUnavailable."""
        key = (query, tuple(also))
        if key not in self._found:
            child = self.span.child("tool:get_formatted_context", "tool",
                                    {"arguments": self.knowledge.arguments(query), "also": list(also)})
            try:
                found = await self.knowledge.search(query, tuple(also), model=self.model)
            except Exception as exc:
                child.end(error=type(exc).__name__)
                raise
            child.end({"text": found.result.text, "references": len(found.result.references),
                       "weak_evidence": found.result.weak_evidence})
            self._found[key] = found
        return self._found[key]

    async def find(self, query: str, also: Also = ()) -> Found | None:
        """`get`, or None when the knowledge base is unavailable (routing cannot judge by
        meaning then, and does not refuse; the answer's own search reports the outage)."""
        try:
            return await self.get(query, also)
        except KnowledgeBaseUnavailable as exc:
            log.warning("knowledge base unavailable during routing: %s", type(exc).__name__)
            return None
