"""Who may press askdesk's buttons, on every surface.

A button acts for one person, so only that person or an admin (ASKDESK_ADMINS) may press it:
"Search the documents anyway" and "Ask a person" act for whoever asked the question; "Save as
answer" acts for the person whose reply was relayed (any member of the escalation channel may
reply, and the first reply is the one relayed); a learned answer's Confirm, Edit and Retire act
for its owner (who saved it). Anyone else gets a private note, and nothing
changes.

Who that person is comes from what askdesk keeps, never from the press: the answer record's
asker, written when the answer was delivered (bot/turn.py), the escalation's expert, written
when the reply was relayed, or the question's author as Slack itself reports it. A button's
value may say which answer it belongs to; it never says who may press it. Nothing of a private
answer may be passed on, so its "Ask a person" is refused to everyone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from agent.state import AnswerRecord

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.prompts import PromptSet

Button = Literal["search_anyway", "ask_a_person", "save_answer", "review_answer"]

OWN_NOTE: dict[str, str] = {"save_answer": "button_expert_only", "review_answer": "button_owner_only"}


def may_press(settings: "Settings", presser: str | None, owner: str | None) -> bool:
    """Whether `presser` may press a button that acts for `owner` (None: nobody known, admins only)."""
    if not presser:
        return False
    return presser == owner or settings.is_admin(presser)


def press_refused(settings: "Settings", prompts: "PromptSet", button: Button, *, presser: str | None,
                  owner: str | None, private: bool = False) -> str | None:
    """The private note `presser` gets instead of what `button` does; None when they may press it."""
    if not (private and button == "ask_a_person") and may_press(settings, presser, owner):
        return None
    return prompts.text(OWN_NOTE.get(button, "button_asker_only"))


def asker_of(record: AnswerRecord | None) -> str | None:
    """Who asked the question `record` answers (None: unknown, e.g. a record that expired)."""
    return record.asker if record is not None else None


def offers_escalation(settings: "Settings", record: AnswerRecord | None, presser: str | None) -> bool:
    """Whether the thanks for `presser`'s 👎 offers "Ask a person": only to the asker of a public
    answer (or an admin), since nobody else may press it."""
    return record is not None and not record.private and may_press(settings, presser, record.asker)
