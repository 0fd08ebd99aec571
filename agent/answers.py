"""What a surface sends the service and what it gets back."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from agent.messages import ChatMessage
from agent.references import Reference

Surface = Literal["cli", "slack", "teams", "eval", "bench"]

# Why a surface did not hand over a file's bytes (the service words the note to the user):
# askdesk cannot read the type, it is over ASKDESK_FILE_MAX_MB, the download failed, or the
# platform keeps it where a bot cannot fetch it (a file shared in a Teams channel).
FileProblem = Literal["image", "unsupported", "too_large", "download_failed", "not_shared"]


class Attachment(BaseModel):
    """A file that came with a question: its bytes, or why the surface has none."""

    name: str
    mimetype: str = ""
    size: int | None = None  # bytes, as the platform declared them
    data: bytes | None = None
    problem: FileProblem | None = None


class AskRequest(BaseModel):
    text: str
    surface: Surface = "cli"
    thread_id: str = "default"  # Slack channel:thread_ts, Teams conversation id, terminal session
    user_id: str | None = None
    history: list[ChatMessage] | None = None  # given by surfaces that own history (Slack thread)
    collection: str | None = None  # knowledge collection override (per Slack channel)
    attachments: list[Attachment] = Field(default_factory=list)  # context for this thread only, never ingested
    private: bool = False  # answered to the asker alone: never stored in the thread's history
    # the asker pressed "Search the documents anyway" on a refusal: a refusal is overridden (the
    # message is searched and answered, with the "may be outside the documents" note)
    search_anyway: bool = False


class AnswerResult(BaseModel):
    answer: str
    route: str  # a capability's name ("knowledge", a registry), or offtopic / smalltalk / clarify
    references: list[Reference] = Field(default_factory=list)
    confidence: float | None = None
    llm_calls: int = 0  # every model attempt of the turn, failed fallbacks included
    tool_calls: list[str] = Field(default_factory=list)
    latency_ms: float = 0.0
    search_only: bool = False
    # the documents do not support an answer: said plainly, with the closest sources (a person can take over)
    unanswerable: bool = False
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
            "unanswerable": self.unanswerable,
            "notice": self.notice,
        }
