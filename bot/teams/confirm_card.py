"""Confirm / Cancel on Teams under an action askdesk proposed (bot/confirm.py): an Adaptive
Card in the proposal's own message whose two `Action.Submit` buttons carry the action. A
press: bot/teams/confirm.py."""

from __future__ import annotations

from typing import Any

from microsoft_teams.api import AdaptiveCardAttachment, Attachment, card_attachment
from microsoft_teams.cards import ActionSet, AdaptiveCard, SubmitAction

from agent.answers import PendingAction
from bot.confirm import CANCEL, CONFIRM

CARD_VERSION = "1.5"


def confirm_card(prompts: Any, action: PendingAction, *, private: bool = False) -> Attachment:
    """`private`: the proposal went to the asker alone, and so does what is decided."""
    def data(pressed: str) -> dict[str, Any]:
        return {"askdesk": pressed, "action": action.model_dump(mode="json"), "p": private}

    card = AdaptiveCard(version=CARD_VERSION, body=[ActionSet(actions=[
        SubmitAction(title=prompts.text("action_confirm_button"), data=data(CONFIRM)),
        SubmitAction(title=prompts.text("action_cancel_button"), data=data(CANCEL))])])
    return card_attachment(AdaptiveCardAttachment(content=card))
