"""Tools that change something run only with the asker's confirmation, exactly as confirmed.

A tool declares `reads_only=False` when it changes something (sends, books, files, deletes).
The agent loop never runs such a call: the turn ends with it proposed instead (`propose`: a
`PendingAction` on the answer, whose text says what would run with which arguments), and the
surfaces show Confirm / Cancel, the terminal y/N. The decision comes back unchanged in
`AskRequest.confirmation`, and `decide` checks it before anything runs:

- only the asker of the proposal may decide (anyone else: a note, and the action stays open);
- askdesk proposed exactly this action (the digest of everything in it, calls and arguments
  included, is kept as a claim in the state store when it is proposed, so a forged or edited
  action, or one past ACTION_TTL_S, runs nothing);
- once: the first decision claims it, on every replica; Confirm then Cancel, or two presses,
  decide once.

Then `run` calls each tool with a `Confirmed` for exactly the confirmed arguments, the only way
a changing tool runs (agent/tools/base.py). Nothing is stored but two claims per proposal.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING, Literal

from agent.answers import Confirmation, PendingAction, ProposedCall
from agent.capabilities.base import Capability, Found
from agent.tools.base import Confirmed, ToolRegistry

if TYPE_CHECKING:
    from agent.answers import AskRequest
    from agent.prompts import PromptSet
    from agent.state.base import Claims

ACTION_TTL_S = 24 * 3600.0  # a proposal can be confirmed for a day
QUESTION_CHARS = 500  # of the question, carried with the action (a Slack button holds 2,000)

# why a decision runs nothing: the prompt (prompts/actions.yaml) that says so
Refusal = Literal["action_not_yours", "action_decided", "action_unknown"]


def digest(action: PendingAction) -> str:
    """What identifies a proposal: every field, arguments included, in one canonical form."""
    canonical = json.dumps(action.model_dump(mode="json"), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


class Actions:
    """Proposals of one knowledge collection's tools, kept as claims in the service's state
    store (shared by replicas)."""

    def __init__(self, state: "Claims", tools: ToolRegistry, ttl_s: float = ACTION_TTL_S) -> None:
        self.state = state
        self.tools = tools
        self.ttl_s = ttl_s

    async def propose(self, calls: list[ProposedCall], request: "AskRequest", question: str,
                      prompts: "PromptSet") -> tuple[str, PendingAction]:
        """The answer that asks the asker to confirm `calls`, and the action to hand back."""
        action = PendingAction(id=uuid.uuid4().hex[:16], calls=calls, asker=request.user_id, surface=request.surface,
                               thread_id=request.thread_id, collection=request.collection,
                               question=question[:QUESTION_CHARS])
        await self.state.claim(_proposed(action), self.ttl_s, settled=True)
        text = prompts.text("action_confirm", calls=[c.model_dump() for c in calls])
        return text, action

    async def decide(self, confirmation: Confirmation, presser: str | None) -> Refusal | None:
        """None when `presser` may decide `confirmation` now (and it is now decided, for good);
        else why nothing may run."""
        action = confirmation.action
        if not presser or presser != action.asker:
            return "action_not_yours"
        # decided first: a forged action claims its own key here and so can never be tried again
        if not await self.state.claim(_decided(action), 2 * self.ttl_s, settled=True):
            return "action_decided"
        if await self.state.claim(_proposed(action), self.ttl_s, settled=True):
            return "action_unknown"  # nobody held it: askdesk never proposed this, or long ago
        return None

    async def run(self, action: PendingAction, capability: str) -> list[Found]:
        """Run each confirmed call with exactly its confirmed arguments, in order; what each
        returned, for the model to answer from (a failure comes back as its result's text)."""
        found: list[Found] = []
        for call in action.calls:
            result = await self.tools.run(call.tool, call.arguments, confirmed=Confirmed(call.tool, call.arguments))
            found.append(Found(capability, call.tool, dict(call.arguments), result, action.question))
        return found


def owner(action: PendingAction, capabilities: Iterable[Capability], default: str) -> str:
    """The capability whose tool the action's first call is, else `default` (a provider's
    tool, such as an MCP server's, belongs to no capability)."""
    first = action.calls[0].tool if action.calls else ""
    return next((c.name for c in capabilities if any(t.name == first for t in c.tools())), default)


def _proposed(action: PendingAction) -> str:
    return f"action:proposed:{digest(action)}"


def _decided(action: PendingAction) -> str:
    return f"action:decided:{digest(action)}"
