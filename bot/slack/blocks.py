"""Block Kit for answers, sources, feedback and registry results.

Answers go in a `markdown` block (standard Markdown), sources in a context block, numbered
like the citations in the text. A table in an answer is a `table` block where it stands (Slack
allows one per message, at most 100 rows of 20 cells); another table in the same message, or
one too large for the block, is aligned monospace in a code block (agent/tables.py). Slack
caps the markdown blocks of one message at 12,000 characters in total (and rejects payloads a
little above that), a context block at 10 elements and a button value at 2,000 characters, so
long answers are split into several messages at paragraph boundaries, never inside a code
fence, and a table only between rows, each part with its header.

Text from documents, registries or a model is escaped here (bot/slack/escape.py) as it goes
into a field — answers with `safe_markdown`, everything in mrkdwn with `safe_mrkdwn` — and the
bot's own markup (source links, `<@U…>`) is added around it afterwards.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

from agent.capabilities.base import Command, CommandResult, RecordView
from agent.markdown import segments
from agent.prompts import LANGUAGE, PromptSet, default_prompts
from agent.references import Reference
from agent.tables import Table, blocks as table_blocks
from bot.note_language import LANGUAGE_KEY
from bot.slack.escape import escaped_size, safe_markdown, safe_mrkdwn, web_link

PART_CHARS = 8000  # per message: well inside the 12k markdown-block budget, room for sources
ESCAPED_PART_CHARS = 11_000  # a part once escaped (`&` -> `&amp;`...): re-split above this
FALLBACK_TEXT_CHARS = 3000  # notification / screen-reader text
TABLE_ROWS = 100  # a table block's rows, its header included
TABLE_COLUMNS = 20
MAX_SOURCES = 8
BUTTON_VALUE_CHARS = 2000
FEEDBACK_BLOCK_ID = "askdesk_feedback"
FEEDBACK_UP = "feedback_up"
FEEDBACK_DOWN = "feedback_down"
RECORDS_SHARE = "records_share"
ESCALATE = "escalate"  # "Ask a person" (bot/slack/escalation.py)
SAVE_ANSWER = "save_answer"  # "Save as answer" on a relayed reply
SEARCH_ANYWAY = "search_anyway"  # under a refusal (bot/slack/anyway.py)
ANYWAY_BLOCK_ID = "askdesk_anyway"

Block = dict[str, Any]


def plain(text: str, limit: int = 3000) -> str:
    """At most `limit` characters; escaped text is never cut inside an entity (`&amp;`)."""
    if len(text) <= limit:
        return text
    cut = limit - 1
    entity = text.rfind("&", max(cut - 5, 0), cut)
    if entity >= 0 and ";" not in text[entity:cut]:
        cut = entity
    return text[:cut] + "…"


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
        while len(item) > room and kind != "table":  # a line/sentence longer than a part: hard cut (a row never)
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


def markdown_block(safe: str) -> Block:
    """A `markdown` block around text already escaped (`safe_markdown`)."""
    return {"type": "markdown", "text": safe}


def answer_parts(answer: str, limit: int = PART_CHARS) -> list[str]:
    """The answer's messages (raw): split between paragraphs, and again where a part would be
    too long for one message once escaped (`<` -> `&lt;`: code full of markup grows)."""
    out: list[str] = []
    for part in split_markdown(answer, limit):
        size = escaped_size(part)
        if size > ESCAPED_PART_CHARS and limit > 1000:
            out.extend(answer_parts(part, max(1000, limit * ESCAPED_PART_CHARS // size - 200)))
        else:
            out.append(part)
    return out


def source_lines(references: Iterable[Reference]) -> list[str]:
    """`[n] title — section`, linked when the source has a web address (titles and addresses
    come from documents: escaped, the address checked, inside the bot's own link)."""
    return [f"[{n}] {web_link(ref.url, plain(ref.label(), 300))}"
            for n, ref in enumerate(list(references)[:MAX_SOURCES], start=1)]


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
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": plain(f":information_source: {safe_mrkdwn(notice)}")}]}


def feedback_value(answer_id: str, route: str, references: list[Reference], language: str | None = None) -> str:
    """Button payload: enough to store feedback without server-side state, and the answer's
    language (the thanks and notes of a press are said in it: bot/note_language.py). Sources are
    dropped from the end until it fits."""
    sources = [r.source for r in references[:MAX_SOURCES]]
    said = {LANGUAGE_KEY: language} if language else {}
    while True:
        value = json.dumps({"a": answer_id, "r": route, **said, "s": sources}, separators=(",", ":"))
        if len(value) <= BUTTON_VALUE_CHARS or not sources:
            return value[:BUTTON_VALUE_CHARS]
        sources = sources[:-1]


def escalate_button(value: str, prompts: "PromptSet | None" = None) -> Block:
    """"Ask a person": passes the question to the escalation channel."""
    return {"type": "button", "action_id": ESCALATE, "value": value[:BUTTON_VALUE_CHARS],
            "text": {"type": "plain_text", "text": "🙋 " + _texts(prompts).text("escalate_button"), "emoji": True}}


def feedback_block(value: str, prompts: "PromptSet | None" = None, *, escalate: bool = False) -> Block:
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
                     button("👎", texts.render("feedback_not_helpful"), FEEDBACK_DOWN),
                     *([escalate_button(value, prompts)] if escalate else [])],
    }


def anyway_block(value: str, prompts: "PromptSet | None" = None) -> Block:
    """"Search the documents anyway", under a refusal: the asker overrides it."""
    return {"type": "actions", "block_id": ANYWAY_BLOCK_ID, "elements": [{
        "type": "button", "action_id": SEARCH_ANYWAY, "value": value[:BUTTON_VALUE_CHARS],
        "text": {"type": "plain_text", "text": "🔎 " + _texts(prompts).text("search_anyway_button"), "emoji": True}}]}


def action_value(action: dict[str, Any]) -> dict[str, Any]:
    """A pressed button's JSON value (empty when it is missing or not an object)."""
    try:
        data = json.loads(action.get("value") or "{}")
    except json.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def anyway_value(question_ts: str, language: str | None = None) -> str:
    """The refused question's ts, and the refusal's language (its notes are said in it)."""
    return json.dumps({"m": question_ts, **({LANGUAGE_KEY: language} if language else {})}, separators=(",", ":"))


def footer_blocks(references: list[Reference], notice: str | None, value: str | None,
                  prompts: "PromptSet | None" = None, *, escalate: bool = False,
                  anyway: str | None = None) -> list[Block]:
    """Sources, an optional notice and feedback buttons (or, under a refusal, "Search the
    documents anyway"): the end of the last answer part."""
    blocks: list[Block] = []
    source = sources_block(references, prompts)
    if source:
        blocks.append(source)
    if notice:
        blocks.append(notice_block(notice))
    if value:
        blocks.append(feedback_block(value, prompts, escalate=escalate))
    if anyway:
        blocks.append(anyway_block(anyway, prompts))
    return blocks


def fits_table_block(table: Table) -> bool:
    return len(table.rows) + 1 <= TABLE_ROWS and 0 < table.width <= TABLE_COLUMNS


def table_block(table: Table) -> Block:
    """A `table` block: the header row, then the rows, cells as plain text (raw_text shows
    its text as written: no Markdown, no mentions, no links)."""
    def row(cells: tuple[str, ...]) -> list[dict[str, str]]:
        return [{"type": "raw_text", "text": cell or " "} for cell in cells]

    settings = [{"is_wrapped": True, **({"align": a} if a else {})} for a in (*table.align, *[""] * table.width)[:table.width]]
    return {"type": "table", "rows": [row(table.plain_header()), *(row(r) for r in table.plain_rows())],
            "column_settings": settings}


def monospace(table: Table) -> str:
    """A table as aligned plain text in a code block (a message's second table, or one too large)."""
    return f"```\n{table.monospace()}\n```"


def part_blocks(part: str) -> list[Block]:
    """One message's answer text as blocks, in order: Markdown (escaped here) and its first
    table as a `table` block; any other table aligned in a code block."""
    out: list[Block] = []
    text: list[str] = []
    tabled = False
    for block in table_blocks(part):
        if isinstance(block, Table) and not tabled and fits_table_block(block):
            if "\n\n".join(text).strip():
                out.append(markdown_block(safe_markdown("\n\n".join(text))))
            text = []
            out.append(table_block(block))
            tabled = True
        else:
            text.append(monospace(block) if isinstance(block, Table) else block)
    if "\n\n".join(text).strip() or not out:
        out.append(markdown_block(safe_markdown("\n\n".join(text) or part)))
    return out


def stream_end(part: str) -> tuple[str, list[Block]]:
    """A streamed message's last text: (the Markdown before its first table, the blocks from
    that table on). chat.stopStream puts its blocks under the streamed text, so the table and
    what follows it keep their order."""
    parts = table_blocks(part)
    first = next((i for i, b in enumerate(parts) if isinstance(b, Table) and fits_table_block(b)), None)
    if first is None:
        return part, []
    before = "\n\n".join(b for b in parts[:first] if isinstance(b, str))
    rest = "\n\n".join(b.markdown() if isinstance(b, Table) else b for b in parts[first:])
    return before, part_blocks(rest)


def answer_messages(
    answer: str, references: list[Reference], *, notice: str | None, value: str | None,
    prompts: "PromptSet | None" = None, escalate: bool = False, anyway: str | None = None,
) -> list[list[Block]]:
    """Blocks of each message of an answer (escaped here); the footer rides on the last one."""
    messages = [part_blocks(p) for p in answer_parts(answer or "…")]
    messages[-1].extend(footer_blocks(references, notice, value, prompts, escalate=escalate, anyway=anyway))
    return messages


def fallback_text(safe: str) -> str:
    """A message's `text` (notifications, screen readers) from its escaped Markdown: cut at a
    line's end where there is one, so no table row is cut."""
    if len(safe) <= FALLBACK_TEXT_CHARS:
        return safe
    head = safe[:FALLBACK_TEXT_CHARS - 1]
    return (head.rsplit("\n", 1)[0] if "\n" in head else plain(head, FALLBACK_TEXT_CHARS - 1)) + "…"


def note_blocks(mrkdwn: str) -> list[Block]:
    """A section of the bot's own mrkdwn (untrusted parts escaped by the caller)."""
    return [{"type": "section", "text": {"type": "mrkdwn", "text": plain(mrkdwn)}}]


def usage_blocks(usage: str) -> list[Block]:
    """A command's usage text (plain text from its declaration) as a code block."""
    return note_blocks(f"```\n{safe_mrkdwn(usage)}\n```")


# --- registry commands (/NAME text) ----------------------------------------------------------

MAX_RECORDS = 10
ICONS = {"phone": ":telephone_receiver:"}  # RecordView detail hints, as Slack draws them


def record_line(view: RecordView) -> str:
    """One compact result: *title*, then its details line (address · phone · ages · distance)."""
    details = " · ".join(f"{ICONS[d.icon]} {safe_mrkdwn(d.text)}" if d.icon in ICONS else safe_mrkdwn(d.text)
                         for d in view.details if d.text)
    return f"*{safe_mrkdwn(view.title)}*\n" + details


def share_value(command: Command, text: str, language: str | None = None) -> str:
    """The Share button's payload: which command, the request to run again in the channel, and the
    language the result was said in."""
    said = {LANGUAGE_KEY: language} if language else {}
    return json.dumps({"c": command.name, **said, "q": text}, separators=(",", ":"))[:BUTTON_VALUE_CHARS]


def record_blocks(result: CommandResult, command: Command, *, shareable: bool, shared_by: str | None = None,
                  prompts: "PromptSet | None" = None) -> list[Block]:
    """A registry command's result as a compact list."""
    texts = _texts(prompts)
    records = result.records
    header = (f"*{texts.render('records_heading', records=command.records)}:* "
              f"{safe_mrkdwn(plain(result.summary or result.text, 500))}")
    if shared_by:
        header += " — " + texts.render("records_shared_by", user=shared_by)
    blocks: list[Block] = [{"type": "section", "text": {"type": "mrkdwn", "text": header}}]
    if result.notes:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": plain(safe_mrkdwn("; ".join(result.notes)), 2000)}]})
    if not records:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": texts.render("records_none", records=command.records)}})
    for view in records[:MAX_RECORDS]:
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": plain(record_line(view))}})
    shown = min(len(records), MAX_RECORDS)
    if result.total > shown:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": texts.render("records_more", shown=shown, total=result.total)}]})
    if shareable and records:
        blocks.append({
            "type": "actions",
            "block_id": "askdesk_records",
            "elements": [{
                "type": "button",
                "text": {"type": "plain_text", "text": texts.render("share_in_channel")},
                "action_id": RECORDS_SHARE,
                "value": share_value(command, result.text, LANGUAGE.get()),  # shared in the language said
            }],
        })
    return blocks


def records_text(result: CommandResult, command: Command, prompts: "PromptSet | None" = None) -> str:
    """Notification text of a registry command's result (mrkdwn: the request and the records'
    names escaped)."""
    texts = _texts(prompts)
    if not result.records:
        return texts.render("records_none_for", records=command.records,
                            query=safe_mrkdwn(result.summary or result.text))
    names = ", ".join(v.title for v in result.records[:5])
    return plain(texts.render("records_found", count=len(result.records), records=command.records,
                              summary=safe_mrkdwn(result.summary), names=safe_mrkdwn(names)))
