"""Shared by the offtopic and conversations eval sections: a service for routing only."""

from __future__ import annotations

from agent.state.memory import MemoryConversationStore
from agent.runtime import Runtime


def eval_service(runtime: Runtime):
    """An Askdesk over `runtime` that keeps nothing on disk (routes with the configured models)."""
    from agent.turn.service import Askdesk

    return Askdesk(runtime.settings, runtime, store=MemoryConversationStore())

