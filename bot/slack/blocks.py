"""Block Kit for answers, sources, feedback and facility results.

Answers go in a `markdown` block (standard Markdown, tables render), sources in a
context block, numbered like the citations in the text. Slack caps the markdown blocks of
one message at 12,000 characters in total (and rejects payloads a little above that), a
context block at 10 elements and a button value at 2,000 characters, so long answers are
split into several messages at paragraph boundaries, never inside a code fence or table.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from agent.markdown import segments
from agent.prompts import PromptSet, default_prompts
from agent.references import Reference

PART_CHARS = 8000  # per message: well inside the 12k markdown-block budget, room for sources
FALLBACK_TEXT_CHARS = 3000  # notification / screen-reader text
MAX_SOURCES = 8
BUTTON_VALUE_CHARS = 2000
FEEDBACK_BLOCK_ID = "askdesk_feedback"
FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
FACILITY_SHARE = "facility_share"

Block = dict[str, Any]


def escape_mrkdwn(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(text: str, limit: int = 3000) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- splitting ----------------------------------------------------------------------------

def _units(text: str) -> list[tuple[str, str]]:
    """Split Markdown into atomic units: ('code', fenced block), ('table', rows), ('text', paragraph).
    Code blocks and tables come from the Markdown parser (agent/markdown.py)."""
    units: list[tuple[str, str]] = []
    for segment in segments(text):
        if segment.kind in ("code", "table"):
            units.append((segment.kind, segment.text))
            continue
        paragraph: list[str] = []
        for line in (*segment.lines, ""):
            if line.strip():
                paragraph.append(line)
            elif paragraph:
                units.append(("text", "\n".join(paragraph)))
                paragraph = []
    return units


def _split_unit(kind: str, text: str, limit: int) -> list[str]:
    """Cut one oversized unit into valid pieces: code keeps its fences, tables their header."""
    lines = text.split("\n")
    fence = lines[0].strip()[:3]
    if kind == "code" and fence in ("```", "~~~"):
        closed = len(lines) > 1 and lines[-1].strip().startswith(fence)
        body = lines[1:-1] if closed else lines[1:]
        head, tail = [lines[0]], [lines[-1] if closed else fence]
    elif kind == "code":  # an indented code block: cut between lines
        head, body, tail = [], lines, []
    elif kind == "table":
        head, body, tail = lines[:2], lines[2:], []
    else:
        head, body, tail = [], re.split(r"(?<=[.!?])\s+", text), []
    overhead = sum(len(x) + 1 for x in head + tail)
    room = max(limit - overhead, 200)
    pieces: list[str] = []
    current: list[str] = []
    size = 0
    joiner = " " if kind == "text" else "\n"
    for item in body:
        while len(item) > room:  # a single line/sentence longer than a part: hard cut
            if current:
                pieces.append(joiner.join(current))
                current, size = [], 0
            pieces.append(item[:room])
            item = item[room:]
        if size + len(item) + 1 > room and current:
            pieces.append(joiner.join(current))
            current, size = [], 0
        current.append(item)
        size += len(item) + 1
    if current:
        pieces.append(joiner.join(current))
    return ["\n".join(head + [p] + tail) if kind != "text" else p for p in pieces]


def split_markdown(text: str, limit: int = PART_CHARS) -> list[str]:
    """Parts of at most `limit` characters, cut between paragraphs, code blocks and tables."""
    text = text.strip()
    if len(text) <= limit:
        return [text]
    parts: list[str] = []
    current = ""
    for kind, unit in _units(text):
        pieces = [unit] if len(unit) <= limit else _split_unit(kind, unit, limit)
        for piece in pieces:
            candidate = f"{current}\n\n{piece}" if current else piece
            if len(candidate) <= limit:
                current = candidate
            else:
                if current:
                    parts.append(current)
                current = piece
    if current:
        parts.append(current)
    return parts


# --- answers ---------------------------------------------------------------------------------


def markdown_block(text: str) -> Block:
    return {"type": "markdown", "text": text}


def source_lines(references: Iterable[Reference]) -> list[str]:
    lines = []
    for n, ref in enumerate(list(references)[:MAX_SOURCES], start=1):
        label = escape_mrkdwn(plain(ref.label(), 300))
        lines.append(f"[{n}] <{ref.url}|{label}>" if ref.url else f"[{n}] {label}")
    return lines


def _texts(prompts: "PromptSet | None") -> "PromptSet":
    return prompts if prompts is not None else default_prompts()


def sources_block(references: list[Reference], prompts: "PromptSet | None" = None) -> Block | None:
    lines = source_lines(references)
    if not lines:
        return None
    heading = _texts(prompts).render("sources_heading")
    return {
        "type": "context",
        "block_id": "askdesk_sources",
        "elements": [{"type": "mrkdwn", "text": plain(f"*{heading}*\n" + "\n".join(lines))}],
    }


def notice_block(notice: str) -> Block:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": plain(f":information_source: {escape_mrkdwn(notice)}")}]}


def feedback_value(answer_id: str, route: str, references: list[Reference]) -> str:
    """Button payload: enough to store feedback without server-side state."""
    sources = [r.source for r in references[:MAX_SOURCES]]
    while True:
        value = json.dumps({"a": answer_id, "r": route, "s": sources}, separators=(",", ":"))
        if len(value) <= BUTTON_VALUE_CHARS or not sources:
            return value[:BUTTON_VALUE_CHARS]
        sources = sources[:-1]


def feedback_block(value: str, prompts: "PromptSet | None" = None) -> Block:
    texts = _texts(prompts)

    def button(emoji: str, label: str, action_id: str) -> Block:
        return {
            "type": "button",
            "text": {"type": "plain_text", "text": f"{emoji} {label}", "emoji": True},
            "action_id": action_id,
            "value": value,
        }

    return {
        "type": "actions",
        "block_id": FEEDBACK_BLOCK_ID,
        "elements": [button("👍", texts.render("feedback_helpful"), FEEDBACK_UP),
                     button("👎", texts.render("feedback_not_helpful"), FEEDBACK_DOWN)],
    }


def footer_blocks(references: list[Reference], notice: str | None, value: str | None,
                  prompts: "PromptSet | None" = None) -> list[Block]:
    """Sources, an optional notice and feedback buttons: the end of the last answer part."""
    blocks: list[Block] = []
    source = sources_block(references, prompts)
    if source:
        blocks.append(source)
    if notice:
        blocks.append(notice_block(notice))
    if value:
        blocks.append(feedback_block(value, prompts))
    return blocks


def answer_messages(
    answer: str, references: list[Reference], *, notice: str | None, value: str | None,
    prompts: "PromptSet | None" = None,
) -> list[list[Block]]:
    """Blocks of each message of an answer; the footer rides on the last one."""
    parts = split_markdown(answer or "…")
    messages = [[markdown_block(p)] for p in parts]
    messages[-1].extend(footer_blocks(references, notice, value, prompts))
    return messages


def fallback_text(text: str) -> str:
    return plain(text, FALLBACK_TEXT_CHARS)


def note_blocks(text: str) -> list[Block]:
    return [{"type": "section", "text": {"type": "mrkdwn", "text": plain(text)}}]


# --- /facility -----------------------------------------------------------------------------

MAX_FACILITIES = 10


def facility_line(hit: Any) -> str:
    """One compact result: *name*, then address · phone · ages · distance."""
    name = escape_mrkdwn(hit.name or "Unnamed facility")
    address = ", ".join(x for x in (hit.address, hit.city.title() if hit.city.isupper() else hit.city, hit.zip) if x)
    details = [escape_mrkdwn(address)] if address else []
    if hit.phone:
        details.append(f":telephone_receiver: {escape_mrkdwn(hit.phone)}")
    if hit.ages:
        details.append("ages: " + escape_mrkdwn(", ".join(hit.ages).lower()))
    if hit.distance_miles is not None:
        details.append(f"{hit.distance_miles:.1f} mi")
    return f"*{name}*\n" + " · ".join(details)


def facility_hits(result: Any) -> list[Any]:
    return list(result.results.facilities) if result.results else []


def facility_blocks(result: Any, *, shareable: bool, shared_by: str | None = None,
                    prompts: "PromptSet | None" = None) -> list[Block]:
    """A /facility result (agent.facilities.command.FacilityCommandResult) as a compact list."""
    hits = facility_hits(result)
    total = result.results.total if result.results else 0
    texts = _texts(prompts)
    header = f"*{texts.render('facilities_heading')}:* {escape_mrkdwn(plain(result.summary or result.text, 500))}"
    if shared_by:
        header += " — " + texts.render("facilities_shared_by", user=shared_by)
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": header}}]
    notes = list(result.notes)
    if result.results and result.results.message:
        notes.append(result.results.message)
    if notes:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": plain(escape_mrkdwn("; ".join(notes)), 2000)}]})
    if not hits:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": texts.render("facilities_none")}})
    for hit in hits[:MAX_FACILITIES]:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": plain(facility_line(hit))}})
    if total > min(len(hits), MAX_FACILITIES):
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": texts.render("facilities_more", shown=min(len(hits), MAX_FACILITIES), total=total)}]})
    if shareable and hits:
        blocks.append({
            "type": "actions",
            "block_id": "askdesk_facility",
            "elements": [{
                "type": "button",
                "text": {"type": "plain_text", "text": texts.render("share_in_channel")},
                "action_id": FACILITY_SHARE,
                "value": plain(result.text, BUTTON_VALUE_CHARS),
            }],
        })
    return blocks


def facility_text(result: Any, prompts: "PromptSet | None" = None) -> str:
    """Notification text of a /facility result."""
    hits = facility_hits(result)
    if not hits:
        return _texts(prompts).render("facilities_none_for", query=result.summary or result.text)
    names = ", ".join(h.name for h in hits[:5])
    return plain(_texts(prompts).render("facilities_found", count=len(hits), summary=result.summary, names=names))
