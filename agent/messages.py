"""The one message shape every provider, memory store and surface exchanges."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

Role = Literal["system", "user", "assistant", "tool"]


class ChatMessage(BaseModel):
    """A chat turn. `tool` messages carry a tool's result text and the tool `name`;
    each provider module converts them to what its API accepts."""

    role: Role
    content: str
    name: str | None = None
    tool_call_id: str | None = None
