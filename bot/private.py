"""Whether one question asks to be answered privately, for Slack and Teams alike.

A channel or group chat answers privately when its mode says so (`Settings.answer_mode_for`:
ASKDESK_ANSWER_MODE, ASKDESK_CHANNEL_ANSWER_MODES); any single question does when it starts
with ASKDESK_PRIVATE_WORD ("@askdesk privately how much leave do I have?", "privately: …").
The word is taken off the question. A one-to-one chat is private already: there only the word
goes.
"""

from __future__ import annotations

import re


def asked_privately(text: str, word: str) -> tuple[str, bool]:
    """(the question without a leading private word, whether it had one)."""
    if word:
        match = re.match(rf"\s*{re.escape(word)}(?![\w'’-])[\s:,.\-–—]*", text, re.IGNORECASE)
        if match is not None:
            return text[match.end():], True
    return text, False
