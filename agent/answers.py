"""What a surface sends the service and what it gets back."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from agent.messages import ChatMessage
from agent.references import Reference

# Where a question was asked: a registered surface's name (`askdesk serve <name>`: slack, teams, a
# plug-in's) or cli / eval / bench. Open, so a surface plug-in needs no edit here; `askdesk serve`
# checks the names it runs against the registered surfaces.
Surface = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_-]{0,39}$")]

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


class ProposedCall(BaseModel):
    """One call of a tool that changes something, exactly as it would run."""

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)


class PendingAction(BaseModel):
    """Calls of tools that change something, proposed to the asker instead of run
    (agent/tools/actions.py): surfaces show Confirm / Cancel (the terminal asks y/N) and hand
    it back unchanged in `AskRequest.confirmation`; only the asker may decide, once."""

    id: str  # a new one per proposal
    calls: list[ProposedCall]
    asker: str | None  # the only person who may confirm it
    surface: str
    thread_id: str
    collection: str | None = None
    question: str  # what was asked (cut short)


class Confirmation(BaseModel):
    """The asker's decision on a `PendingAction`: confirmed (its calls run, their results are
    answered) or cancelled (nothing runs)."""

    action: PendingAction
    confirmed: bool


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
    # who may read the answer, as the knowledge sources' audiences name them (agent/audience.py):
    # a channel's id, or the asker's id, email and domain; None: unrestricted (the terminal)
    audience: list[str] | None = None
    # the asker's Confirm / Cancel of an action askdesk proposed (agent/tools/actions.py)
    confirmation: Confirmation | None = None


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
    action: PendingAction | None = None  # calls that change something, waiting for the asker's confirmation
    # the asker's language (agent/knowledge/language.py): surfaces say their fixed texts (buttons,
    # headings, notes) in it with `agent.prompts.speaking`; English when askdesk has no texts in it
    language: str = "en"

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
            "language": self.language,
        } | ({"action": self.action.model_dump()} if self.action is not None else {})
