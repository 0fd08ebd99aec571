"""Small response models shaped like the agent's step: a discriminated union of
"tool calls" and "final answer", a nested list, an optional field.
(No free-form `dict` fields: Gemini function declarations cannot describe them.)"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field


class Source(BaseModel):
    source: str
    section: str | None = None


class ToolCall(BaseModel):
    name: str
    query: str
    limit: int | None = None


class CallTools(BaseModel):
    kind: Literal["tool_calls"] = "tool_calls"
    calls: list[ToolCall]


class FinalAnswer(BaseModel):
    kind: Literal["final_answer"] = "final_answer"
    answer: str
    references: list[Source] = Field(default_factory=list)
    confidence: float | None = None


class Step(BaseModel):
    """One agent step: call tools or answer."""

    thought: str | None = None
    step: Annotated[CallTools | FinalAnswer, Field(discriminator="kind")]


FINAL = {"step": {"kind": "final_answer", "answer": "Families of 4 qualify under $5,000/month.",
                  "references": [{"source": "eligibility.md", "section": "Income"}, {"source": "faq.md"}],
                  "confidence": 0.8}}
TOOLS = {"thought": "need context",
         "step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context", "query": "income"}]}}
