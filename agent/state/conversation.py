"""A thread's history as the agent sees it, trimmed to a character budget.

Slack reads history back from the thread itself and passes it in the request; Teams and the
terminal keep it in the state store, keyed by surface + thread id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agent.messages import ChatMessage


def conversation_key(surface: str, thread_id: str) -> str:
    return f"{surface}:{thread_id}"


# An answer keeps at most this share of the budget (its opening: the lead-in and the lines that
# answer): a search-only answer shows whole sections and tables, and two of them would otherwise
# push the thread's first question, the subject its follow-ups lean on, out of the history.
ANSWER_SHARE = 1 / 3


def trim_history(messages: list[ChatMessage], budget_chars: int) -> list[ChatMessage]:
    """The newest messages whose contents fit in `budget_chars` (order kept), each answer cut to
    ANSWER_SHARE of the budget first, so questions are kept before long answers are.

    A single newest message longer than the budget is cut from its start, so the model
    always sees the latest context."""
    if budget_chars <= 0 or not messages:
        return []
    cap = max(1, int(budget_chars * ANSWER_SHARE))
    messages = [m.model_copy(update={"content": m.content[:cap].rstrip() + " …"})
                if m.role == "assistant" and len(m.content) > cap else m for m in messages]
    kept: list[ChatMessage] = []
    used = 0
    for message in reversed(messages):
        size = len(message.content)
        if used + size > budget_chars:
            if not kept:
                kept.append(message.model_copy(update={"content": message.content[-budget_chars:]}))
            break
        kept.append(message)
        used += size
    kept.reverse()
    return kept


@dataclass
class Conversation:
    """One thread's history (user and assistant turns only)."""

    surface: str
    thread_id: str
    messages: list[ChatMessage] = field(default_factory=list)

    @property
    def key(self) -> str:
        return conversation_key(self.surface, self.thread_id)

    def trimmed(self, budget_chars: int) -> list[ChatMessage]:
        return trim_history(self.messages, budget_chars)
