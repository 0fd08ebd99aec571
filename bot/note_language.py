"""Which language a note outside a turn is said in (a button's thanks or refusal, a welcome, a
registry command's acknowledgement), for every surface.

A turn knows its language (`AnswerResult.language`); a button pressed later, a welcome or a
slash command has no turn around it, so each says where its language comes from: the language
the button carries (the answer's, written into its value when the answer was delivered), the
text the person typed when it is clear (the service reads it: `Askdesk.clear_language`), or the
person's locale as their client reports it ("es-ES", "vi-VN"). Anything the prompts do not
speak, or nothing at all, is English.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent.prompts import ENGLISH

if TYPE_CHECKING:
    from agent.prompts import PromptSet

LANGUAGE_KEY = "l"  # the answer's language in a button's value (Slack) or data (Teams)


def spoken(prompts: "PromptSet", lang: Any) -> str | None:
    """`lang` when these prompts speak it (a button's value comes back from the client: checked)."""
    return lang if isinstance(lang, str) and lang in prompts.languages else None


def pressed_language(prompts: "PromptSet", value: Mapping[str, Any]) -> str:
    """The language a pressed button carries; English for a button made before it carried one."""
    return spoken(prompts, value.get(LANGUAGE_KEY)) or ENGLISH


def locale_language(prompts: "PromptSet", locale: Any) -> str | None:
    """The language part of a client's locale ("es-ES", "vi_VN", "es-419") when spoken; else None."""
    if not isinstance(locale, str) or not locale:
        return None
    return spoken(prompts, locale.replace("_", "-").split("-", 1)[0].lower())


def note_language(prompts: "PromptSet", typed: str | None, *, locale: Any = None) -> str:
    """`typed` (the language of what the person typed, None when it cannot be told) when spoken,
    else their locale's, else English."""
    return spoken(prompts, typed) or locale_language(prompts, locale) or ENGLISH
