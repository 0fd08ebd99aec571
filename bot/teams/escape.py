"""Untrusted text made safe for Teams: what documents, registries and the model wrote, before
it goes into a message, a stream update, an Adaptive Card or a compose-box result.

Teams renders a bot's text as Markdown with HTML allowed (`<at>Name</at>` plus a mention entity
is a mention, `<a href=…>` a link, `<img>` an image), Adaptive Cards render Markdown links, and
thumbnail cards render HTML. `teams_text` keeps Markdown formatting (bold, lists, code, the `[n]`
citation markers) and neutralises the rest:

- a Markdown link or image whose label could hide its address (`[Click here](https://evil.example)`)
  becomes `Click here (https://evil.example)`: the real address is what shows (Teams links a bare
  address itself); `<https://…>` autolinks become the bare address, and link reference
  definitions (`[x]: https://…`) are broken so `[label][x]` cannot link either;
- every `<` that would start a tag (`<at>`, `</at>`, `<a `, `<img`, `<script`, `<!--`) gets a
  zero-width space after it, and so does every `&` that would start a character reference
  (`&lt;`, `&#60;`): an HTML parser reads `<` + U+200B as text, so the markup shows as typed, in
  messages, code spans and cards alike, and no entity decoding can rebuild a tag.

The function is idempotent (rendering twice changes nothing more), so our own markup can be
added around already-rendered parts, and every rendered string is safe on its own, so a stream
can show the rendering of the text so far (bot/teams/reply.py). Trusted markup we build (bold
headings, the notice's italics, citation entities, a mention added with the SDK's `add_mention`)
is added after rendering and is left alone.
"""

from __future__ import annotations

import re

ZWSP = "\u200b"

_LABEL = r"(?:\\.|[^\[\]\\]|\[(?:\\.|[^\[\]\\])*\])*"  # one level of nested brackets ([1] in a label)
_DEST = r"<[^>\n]*>|[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*"  # <...> or a URL with balanced parentheses
_TITLE = r"\"[^\"]*\"|'[^']*'|\([^()]*\)"
_INLINE_LINK = re.compile(rf"(!?)\[({_LABEL})\]\(\s*({_DEST})(?:\s+(?:{_TITLE}))?\s*\)")
_AUTOLINK = re.compile(r"<((?:https?|ftp|mailto|tel):[^\s<>]*)>", re.IGNORECASE)
_REFERENCE_DEFINITION = re.compile(r"^( {0,3}\[[^\]\n]+\]):", re.MULTILINE)
_TAG_START = re.compile(r"<(?=[A-Za-z/!?])")
_REFERENCE_START = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_MAX_PASSES = 4  # links nested in link labels: each pass unwraps one level


def _shown(match: re.Match[str]) -> str:
    label, destination = match.group(2).strip(), match.group(3).strip()
    if destination.startswith("<") and destination.endswith(">"):
        destination = destination[1:-1].strip()
    if not destination:
        return label
    if not label or label.rstrip("/") == destination.rstrip("/"):
        return destination
    return f"{label} ({destination})"


def _unlink(text: str) -> str:
    for _ in range(_MAX_PASSES):
        unlinked = _INLINE_LINK.sub(_shown, text)
        if unlinked == text:
            break
        text = unlinked
    text = _AUTOLINK.sub(r"\1", text)
    return _REFERENCE_DEFINITION.sub(rf"\1{ZWSP}:", text)


def teams_text(text: str | None) -> str:
    """`text` (untrusted) as Teams Markdown that shows what it says: no mention, no HTML, no
    link whose label hides its address. Markdown formatting and `[n]` markers are kept."""
    if not text:
        return ""
    text = _unlink(text)
    text = _TAG_START.sub("<" + ZWSP, text)
    return _REFERENCE_START.sub("&" + ZWSP, text)
