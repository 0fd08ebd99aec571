"""Confirm / Cancel under an action askdesk proposed, for every surface (agent/tools/actions.py).

When the model calls a tool that changes something, the answer carries a `PendingAction`
instead of running it; Slack and Teams show Confirm / Cancel under it and the terminal asks
y/N. The buttons carry the action itself, unchanged (a button's value says what it belongs to,
never who may press it: bot/permissions.py). Only the asker may press them: anyone else gets a
private note and nothing happens. A press goes back through the turn runner like a question
(`Incoming.confirmation`), and the service checks it again before anything runs: that askdesk
proposed exactly this action to this person, and that it was not decided already.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from agent.answers import Confirmation, PendingAction

if TYPE_CHECKING:
    from agent.prompts import PromptSet

CONFIRM = "action_confirm"  # the buttons' action ids (Slack) and `askdesk` data (Teams)
CANCEL = "action_cancel"


def press_refused(prompts: "PromptSet", presser: str | None, action: PendingAction) -> str | None:
    """The private note for someone other than the asker (admins included: an action acts in
    the asker's name, so only they may let it run); None when they may press."""
    return None if presser and presser == action.asker else prompts.text("action_not_yours")


def value_of(action: PendingAction) -> str:
    """The action as a button carries it (compact JSON)."""
    return action.model_dump_json()


def confirmation_of(pressed: str, value: Any) -> Confirmation | None:
    """The decision a press of CONFIRM or CANCEL carries; None for anything else or a value
    that is not an action (nothing runs)."""
    if pressed not in (CONFIRM, CANCEL):
        return None
    try:
        data = json.loads(value) if isinstance(value, str) else value
        return Confirmation(action=PendingAction.model_validate(data), confirmed=pressed == CONFIRM)
    except (ValueError, ValidationError):
        return None
