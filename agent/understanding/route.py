"""The route of a message, typed: what the turn does with it. The stages match on it.

    Refuse   off-topic: the refusal (which offers "Search the documents anyway")
    Greet    a greeting or "what can you do?": the greeting
    Clarify  the turn asks back: an empty or unreadable message, the router model's question
    Use      a capability answers (the knowledge base, a registry), searched with `query`
    Act      the asker confirmed or cancelled calls a model proposed (agent/tools/actions.py)

Every route says who decided it and why, for traces and `askdesk eval`. Its public name — the
`route` of `AnswerResult` (`askdesk ask --json`), of stored answer and turn records, of the
report, of eval files and of the router model's choices — is derived here only (`route_name`):
"offtopic", "smalltalk", "clarify", "action" or the capability's name, the strings routes used
to be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, assert_never

if TYPE_CHECKING:
    from agent.capabilities.base import Capability

# who decided: the wording or the gate's numbers (prefilter), a rule for what those leave open
# (heuristic), the router model, the asker ("Search the documents anyway"), attached files, the
# message check (empty, too long)
DecidedBy = Literal["prefilter", "heuristic", "model", "asker", "attachment", "check"]

# the public names of the turn's own routes (a capability's route is named by the capability)
REFUSED, GREETING, CLARIFYING = "offtopic", "smalltalk", "clarify"
ACTED = "action"  # a decided action whose tool no capability owns (a provider's): no feedback buttons
TURN_ROUTES = (GREETING, CLARIFYING, REFUSED)


@dataclass(kw_only=True)
class Decision:
    """What every route carries: who decided it, why, and how close the message came to the
    knowledge base (its best similarity; None when it was not searched)."""

    decided_by: DecidedBy
    reason: str = ""
    best_score: float | None = None

    @property
    def name(self) -> str:
        """The public name (see `route_name`)."""
        return route_name(self)  # type: ignore[arg-type]  # every Decision is one of Route's variants


@dataclass(kw_only=True)
class Refuse(Decision):
    """Off-topic: refused without a search of the capabilities."""


@dataclass(kw_only=True)
class Greet(Decision):
    """A greeting: answered with what askdesk is about."""


@dataclass
class Clarify(Decision):
    """The turn asks back: `question` (None: the prompts' clarifying question)."""

    question: str | None = None


@dataclass(repr=False)
class Use(Decision):
    """`capability` answers, from a search for `query` (a follow-up rewritten with its thread)."""

    capability: "Capability"
    query: str
    rewritten: bool = False  # `searched` is not the message as written
    borderline: bool = False  # answered without a model though it may be outside the documents
    also: list[tuple[str, float]] = field(default_factory=list)  # (query, weight) searches fused with `query`

    @property
    def searched(self) -> str:
        """The query the documents were searched with (a message in its thread: that search)."""
        return self.also[0][0] if self.also else self.query

    def __repr__(self) -> str:
        return (f"Use({self.capability.name!r}, {self.query!r}, decided_by={self.decided_by!r}, "
                f"reason={self.reason!r}, best_score={self.best_score!r}, rewritten={self.rewritten!r}, "
                f"borderline={self.borderline!r}, also={self.also!r})")


@dataclass(repr=False)
class Act(Decision):
    """The asker's decision on calls a model proposed, answered from what they returned.
    `capability`: the one whose tool the first call is (its search-only answer); None: a
    provider's tool (an MCP server's), which belongs to no capability."""

    question: str  # the question the calls were proposed for
    capability: "Capability | None" = None

    def __repr__(self) -> str:
        owner = self.capability.name if self.capability is not None else None
        return f"Act({self.question!r}, capability={owner!r}, decided_by={self.decided_by!r}, reason={self.reason!r})"


Route = Refuse | Greet | Clarify | Use | Act


def route_name(route: Route) -> str:
    """The route's public name: what `AnswerResult.route`, stored records and eval files say."""
    match route:
        case Refuse():
            return REFUSED
        case Greet():
            return GREETING
        case Clarify():
            return CLARIFYING
        case Use(capability=capability):
            return capability.name
        case Act(capability=capability):
            return capability.name if capability is not None else ACTED
        case _:
            assert_never(route)


def chosen(name: str, capabilities: Mapping[str, "Capability"], *, query: str, text: str,
           question: str | None = None) -> Route:
    """The route the router model named (its schema offers the turn's own routes and the
    deployment's capabilities only; KeyError for another name)."""
    reason = "router model"
    if name == REFUSED:
        return Refuse(decided_by="model", reason=reason)
    if name == GREETING:
        return Greet(decided_by="model", reason=reason)
    if name == CLARIFYING:
        return Clarify(question, decided_by="model", reason=reason)
    return Use(capabilities[name], query, rewritten=query != text, decided_by="model", reason=reason)


def describe(route: Route) -> dict[str, Any]:
    """Trace view of a routing decision (the routed query, no other message text)."""
    view: dict[str, Any] = {"route": route_name(route), "decided_by": route.decided_by, "reason": route.reason,
                            "best_score": route.best_score}
    match route:
        case Use():
            view |= {"query": route.query, "rewritten": route.rewritten, "fused_searches": 1 + len(route.also),
                     "borderline": route.borderline}
    return view
