"""Untrusted text on its way to Slack: the one place where it is made safe.

Whatever comes from documents, registries or a model passes through here before it reaches
a Slack API field. The bot's own markup (a `<@U…>` mention of the asker, a `<url|label>` link to
a source) is put around text that is already escaped, so it works and is never escaped twice.

- `&`, `<` and `>` become `&amp;`, `&lt;` and `&gt;` (Slack's escaping rules) everywhere, code
  included, so no `<!channel>`, `<!here>`, `<!everyone>`, `<@U…>`, `<#C…>`, `<!subteam^…>` or
  disguised `<https://evil|Click here>` can be formed. Slack resolves these in Markdown too
  (a `markdown` block's text, a stream's `markdown_text`), so both kinds of field get this.
- Links show their address: `[label](url)`, `![alt](url)` and `<url|label>` become
  `label (url)`, `<url>` becomes `url` (outside fenced code blocks).
- Markdown fields only: every `](` left (nested brackets, a label over several lines, code) gets
  a backslash, `]\\(`, and so does the `:` of a line-starting `[label]:` (a link reference
  definition): literal brackets, never a link. This does not depend on finding code blocks the
  way Slack does; the price is a visible backslash in code that has `](` in it. A `>` that starts
  a line stays: it makes a quote, and with every `<` escaped it closes nothing.

`safe_mrkdwn` is for mrkdwn fields (section and context text objects, a message's `text`),
`safe_markdown` for Markdown fields, `MarkdownStream` for Markdown streamed in pieces,
`web_link` for the bot's own links.
"""

from __future__ import annotations

import re

__all__ = ["MarkdownStream", "escaped_size", "safe_markdown", "safe_mrkdwn", "web_link"]

# Each pattern starts with a literal character, so that re finds candidates at memchr speed.
# Fenced code blocks (CommonMark, top level; matched on "\n" + text): there links stay as written.
_FENCE_LINE = re.compile(r"\n {0,3}(`{3,}|~{3,})([^\n]*)")
_MARKDOWN_LINK = re.compile(r"""
    \[(?P<label>(?:[^\[\]\n]|\[[^\[\]\n]*+\])*+)\]       # [label] (or ![alt]), one level of [] inside
    \(\s*+(?P<url><[^<>\n]*+>|(?:[^\s()]|\([^\s()]*+\))*+)  # (url or <url>, one level of () inside
    (?:\s++(?:"[^"\n]*+"|'[^'\n]*+'|\([^()\n]*+\)))?+\s*+\)  #  "an optional title")
""", re.X)
_SLACK_LINK = re.compile(r"<(?P<address>(?:https?|ftp)://[^\s<>|]++|(?:mailto|tel):[^\s<>|]++)"
                         r"(?:\|(?P<text>[^<>\n]*+))?>", re.I)  # <url> or <url|label>
_INLINE_LINK = re.compile(r"\](?=\()")  # what is left of `[label](url)`
# `[label]:` starting a line (after quote or list markers; matched on "\n" + text): a link
# reference definition
_DEFINITION = re.compile(r"\n[ \t>*+\-\d.)]*+\[(?:[^\[\]\\]|\\[\s\S])*+\](?=:)")
_BRACKET = re.compile(r"\\.|[\[\]]")  # brackets, and escapes to skip
_QUOTE = re.compile(r"\n[ \t]*(?:&gt;[ \t]*)+")  # quote markers starting a line, once escaped
_WEB = re.compile(r"^https?://\S+$", re.I)
HOLD_CHARS = 1000  # a stream holds an unfinished link back for at most this many characters


def safe_mrkdwn(text: str) -> str:
    """Untrusted text for a mrkdwn field: links show their address, `&<>` escaped."""
    if not text:
        return ""
    return _escape(_rewrite(text, markdown=False), quotes=False)


def safe_markdown(text: str) -> str:
    """Untrusted text for a Markdown field (a `markdown` block, a stream's `markdown_text`)."""
    if not text:
        return ""
    return _escape(_rewrite(text, markdown=True), quotes=True)


def web_link(url: str | None, label: str) -> str:
    """The bot's own mrkdwn link, `<url|label>`, around an untrusted label and address: the label
    escaped; the address only when it is a web address, written so it cannot end the link early."""
    text = safe_mrkdwn(label)
    url = (url or "").strip()
    if not _WEB.match(url):
        return text
    address = url.replace("&", "&amp;").replace("<", "%3C").replace(">", "%3E").replace("|", "%7C")
    return f"<{address}|{text}>"


class MarkdownStream:
    """One streamed message's Markdown, escaped piece by piece.

    Slack renders a stream's pieces as one text, so each piece is escaped knowing what went
    before (in a code block or not, the line it continues), and a piece never ends with a `]`
    (its `(` or `:` in the next piece would make link syntax of two safe pieces). An unfinished
    link is held back until it is complete, so that it is rewritten whole."""

    def __init__(self) -> None:
        self.sent = ""  # the raw text whose escaped form has been handed out
        self._line = ""  # its last, unfinished line
        self._opener = ""  # the fence of the code block its finished lines end in ("" outside one)

    def render(self, text: str, *, final: bool = False) -> tuple[str, int]:
        """(escaped Markdown for text[:n], n): `text` continues what was rendered so far; unless
        `final`, a tail that may still become a link stays back (n < len(text)) for the next piece."""
        n = len(text) if final else _ready(text)
        if n == 0:
            return "", 0
        head = text[:n]
        partial = self._line  # the line this piece continues (a line start for the patterns)
        work = partial + head
        code, opener = _fences(work, self._opener)
        out = _rewrite(work, markdown=True, skip=len(partial), code=code)
        self.sent += head
        done = work.rfind("\n") + 1
        self._line = work[done:]
        if done:  # the state after the finished lines (the unfinished one may be a fence yet)
            tail = work[done:]
            self._opener = _fences(work[:done], self._opener)[1] if "```" in tail or "~~~" in tail else opener
        return _escape(out, quotes=True, line_start=not partial.strip(" \t>")), n


# --- the pieces -----------------------------------------------------------------------------


def _fences(text: str, opener: str = "") -> tuple[list[tuple[int, int]], str]:
    """Fenced code blocks as (start, end) spans, and the fence of the block the text ends in
    ("" outside): `opener` is the fence of a block the text starts in."""
    if not opener and "```" not in text and "~~~" not in text:
        return [], ""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _FENCE_LINE.finditer("\n" + text):  # positions in text: m.start() is the line's start
        fence, rest = m.group(1), m.group(2)
        if not opener:
            if not (fence[0] == "`" and "`" in rest):
                start, opener = m.start(), fence
        elif fence[0] == opener[0] and len(fence) >= len(opener) and not rest.strip():
            spans.append((start, m.end() - 1))
            opener = ""
    if opener:
        spans.append((start, len(text)))
    return spans, opener


def _link(m: re.Match[str]) -> str:
    if m.re is _SLACK_LINK:  # <url> or <url|label>
        url, label = m.group("address"), (m.group("text") or "").strip()
    else:
        url, label = (m.group("url") or "").strip().strip("<>").strip(), m.group("label").strip()
    if not url:
        return label
    if not label or label.rstrip("/") == url.rstrip("/"):
        return url
    return f"{label} ({url})"


def _markdown_links(text: str, skip: int) -> str:
    """`[label](url)` and `![alt](url)` -> `label (url)`, from `skip` on (not `\\[…`: escaped)."""
    out: list[str] = []
    position = 0
    for m in _MARKDOWN_LINK.finditer(text):
        start = m.start()
        if start < skip or (start and text[start - 1] == "\\"):
            continue
        if start - 1 >= max(skip, 0) and text[start - 1] == "!":
            start -= 1  # an image: its `!` goes too
        out.extend((text[position:start], _link(m)))
        position = m.end()
    if not out:
        return text
    out.append(text[position:])
    return "".join(out)


def _rewrite(text: str, *, markdown: bool, skip: int = 0, code: list[tuple[int, int]] | None = None) -> str:
    """text[skip:] with its links rewritten outside `code` (fenced blocks; found here if not
    given) and, for Markdown, link syntax disarmed (text[:skip], handed out already, is context
    only: nothing is changed before `skip`)."""
    if "](" in text or "<" in text:
        out: list[str] = []
        position = 0
        for start, end in [*(_fences(text)[0] if code is None else code), (len(text), len(text))]:
            part = text[position:start]
            if "](" in part:
                rewritten = _markdown_links(part, skip - position)
                if rewritten is not part and "](" in rewritten:  # a link a label held: [[a](b)](c)
                    rewritten = _markdown_links(rewritten, skip - position)
                part = rewritten
            if "<" in part:
                base = position
                slack_link = (lambda m: _link(m) if base + m.start() >= skip else m.group(0)) if skip > base else _link
                part = _SLACK_LINK.sub(slack_link, part)
            out.extend((part, text[start:end]))
            position = end
        text = "".join(out)
    if markdown:
        # a backslash at each match's end: never in what was handed out (before `skip`)
        if "](" in text:
            text = (_INLINE_LINK.sub(lambda m: "]\\" if m.end() >= skip else "]", text) if skip
                    else _INLINE_LINK.sub(r"]\\", text))
        if "]:" in text:
            lined = _DEFINITION.sub(lambda m: m.group(0) + "\\" if m.end() - 1 >= skip else m.group(0),
                                    "\n" + text)
            text = lined[1:]
    return text[skip:]


def _escape(text: str, *, quotes: bool, line_start: bool = True) -> str:
    if "&" in text:
        text = text.replace("&", "&amp;")
    if "<" in text:
        text = text.replace("<", "&lt;")
    if ">" in text:
        text = text.replace(">", "&gt;")
        if quotes:  # a `>` starting a line is a Markdown quote: keep it
            restore = lambda m: m.group(0).replace("&gt;", ">")  # noqa: E731
            text = _QUOTE.sub(restore, "\n" + text)[1:] if line_start else _QUOTE.sub(restore, text)
    return text


def _opening(text: str, close: int) -> int:
    """Where the `[` that the `]` at `close` ends starts (nesting counted), or -1."""
    depth = 0
    for i in range(close, max(close - HOLD_CHARS, -1), -1):
        if text[i] == "]":
            depth += 1
        elif text[i] == "[":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _ready(text: str) -> int:
    """How much of a streamed piece can go now: not its last `]` (a `(` or `:` after it in the
    next piece would make link syntax), not an unfinished `[label`, `[label](url` or `<url|label`
    (held back, up to a blank line or HOLD_CHARS, so that it is rewritten or disarmed whole)."""
    n = len(text)
    while n and text[n - 1] in "]!":
        n -= 1
    holds: list[int] = []
    unmatched: list[int] = []
    for m in _BRACKET.finditer(text, max(text.rfind("\n\n", 0, n) + 1, n - HOLD_CHARS, 0), n):
        if m.group() == "[":
            unmatched.append(m.start())
        elif m.group() == "]" and unmatched:
            unmatched.pop()
    if unmatched:
        holds.append(unmatched[0])  # `[label` so far
    opened = text.rfind("](", 0, n)
    if opened >= 0 and ")" not in text[opened + 2:n] and (label := _opening(text, opened)) >= 0:
        holds.append(label)  # `[label](https://…` so far
    angle = text.rfind("<", 0, n)
    if angle >= 0 and ">" not in text[angle:n]:
        holds.append(angle)  # `<https://…|label` so far
    holds = [h for h in holds if n - h <= HOLD_CHARS and "\n\n" not in text[h:n]]
    if holds:
        hold = min(holds)
        n = hold - 1 if hold and text[hold - 1] == "!" else hold  # ![alt](…: with its `!`
    return n


def escaped_size(text: str) -> int:
    """How long `text` can get once escaped (each `&` gains 4 characters, `<` and `>` 3): for
    budgets counted before escaping, such as a streamed message's."""
    return len(text) + 4 * text.count("&") + 3 * (text.count("<") + text.count(">"))
