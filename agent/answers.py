"""What a surface sends the service and what it gets back."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.messages import ChatMessage
from agent.references import Reference

Surface = Literal["cli", "slack", "teams", "eval", "bench"]


class AskRequest(BaseModel):
    text: str
    surface: Surface = "cli"
    thread_id: str = "default"  # Slack channel:thread_ts, Teams conversation id, terminal session
    user_id: str | None = None
    history: list[ChatMessage] | None = None  # given by surfaces that own history (Slack thread)
    collection: str | None = None  # knowledge collection override (per Slack channel)


class AnswerResult(BaseModel):
    answer: str
    route: str  # a capability's name ("knowledge", a registry), or offtopic / smalltalk / clarify
    references: list[Reference] = Field(default_factory=list)
    confidence: float | None = None
    llm_calls: int = 0  # every model attempt of the turn, failed fallbacks included
    tool_calls: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    search_only: bool = False
    notice: str | None = None  # e.g. "No LLM provider configured: set OPENAI_API_KEY ..."
    rewritten_query: str | None = None
    data: dict[str, list[Any]] = Field(default_factory=dict)  # tool name -> what each call found (its own type)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "route": self.route,
            "references": [r.model_dump() for r in self.references],
            "llm_calls": self.llm_calls,
            "tool_calls": self.tool_calls,
            "latency_ms": round(self.latency_ms, 1),
            "search_only": self.search_only,
            "notice": self.notice,
        }
