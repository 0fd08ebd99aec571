"""The structured outputs the models return (instructor response models).

An agent step is a tagged union: either tool calls or a final answer (the router model's
`RouterDecision` is built from the deployment's routes: agent/understanding/router.py). Field descriptions are part of the schema the model sees, so they are
written for the model.
"""

from __future__ import annotations

import json
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

class ToolCall(BaseModel):
    name: str = Field(description="Name of the tool to call, exactly as listed.")
    arguments: dict[str, Any] = Field(default_factory=dict, description="Arguments matching the tool's JSON schema.")

    @field_validator("arguments", mode="before")
    @classmethod
    def _json_string(cls, value: Any) -> Any:
        # Some models send arguments as a JSON string; accept both shapes.
        if isinstance(value, str):
            try:
                return json.loads(value) if value.strip() else {}
            except json.JSONDecodeError:
                raise ValueError("arguments must be a JSON object") from None
        return value


class ToolCalls(BaseModel):
    """Call one or more tools; independent calls run in parallel."""

    kind: Literal["tool_calls"]
    calls: list[ToolCall] = Field(min_length=1, description="The tool calls to run now.")


class Citation(BaseModel):
    source: str = Field(description="The `source` attribute of a cited document.")
    section: str | None = Field(None, description="The `section` attribute of the cited document, if any.")


class FinalAnswer(BaseModel):
    """The answer for the user, grounded in the documents, with references."""

    kind: Literal["final_answer"]
    answer: str = Field(description="The answer shown to the user.")
    references: list[Citation] = Field(default_factory=list, description="Documents the answer relies on.")
    confidence: float = Field(0.5, ge=0.0, le=1.0, description="0-1: how well the evidence supports the answer.")


class AgentStep(BaseModel):
    """One agent step: either `tool_calls` or `final_answer`."""

    # A plain union (the `kind` literals tell the branches apart): a pydantic discriminator
    # cannot survive instructor's Partial[...] (streamed steps make every field optional).
    step: ToolCalls | FinalAnswer
