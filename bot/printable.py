"""Text from documents and file names, made safe to print on a terminal.

A file name or a document can hold terminal control sequences (ESC and C1 codes that move the
cursor, clear the screen, set the window title or hide text) and bidirectional overrides that
display text in another order than it is stored. What the CLI prints from them is stripped of
those characters; JSON output keeps the data whole but escapes them (`\\u001b`), so a terminal
never receives them raw either way.
"""

from __future__ import annotations

import re

# C0 controls but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates
_UNSAFE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_UNSAFE_LINE = re.compile(f"[{_UNSAFE}]")
_UNSAFE_TEXT = re.compile(f"[{_UNSAFE}\n\t]")


def printable(text: object, *, multiline: bool = False) -> str:
    """`text` without control characters (newlines and tabs kept when `multiline`)."""
    return (_UNSAFE_LINE if multiline else _UNSAFE_TEXT).sub("", str(text))


def json_safe(text: str) -> str:
    """JSON text (from json.dumps) with the unsafe characters that survive its escaping
    (DEL, C1, bidi) written as \\u escapes: the same JSON value, nothing raw on the terminal."""
    return _UNSAFE_LINE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
