"""Slack building blocks that need no server: splitting, Block Kit limits, thread history
conversion (dedupe, rate limits and feedback records: tests/test_state_contract.py)."""

from __future__ import annotations

import json

from agent.references import Reference
from agent.yamlio import safe_load
from bot.slack import blocks
from bot.slack.history import askers, strip_mention, to_chat


def _fences_balanced(part: str) -> bool:
    return sum(1 for line in part.split("\n") if line.strip().startswith("```")) % 2 == 0


def test_short_answer_is_one_part():
    assert blocks.split_markdown("Hello **there**") == ["Hello **there**"]


def test_long_answer_splits_between_paragraphs_within_limit():
    paragraphs = [f"Paragraph {i} " + "word " * 150 for i in range(30)]
    parts = blocks.split_markdown("\n\n".join(paragraphs), limit=2000)
    assert len(parts) > 1
    assert all(len(p) <= 2000 for p in parts)
    assert "".join("".join(parts).split()) == "".join("".join(paragraphs).split())  # nothing lost
    assert all(p.startswith("Paragraph") for p in parts)  # every cut falls between paragraphs


def test_code_block_and_table_are_never_cut_when_they_fit():
    code = "```python\n" + "\n".join(f"x{i} = {i}" for i in range(60)) + "\n```"
    table = "| a | b |\n|---|---|\n" + "\n".join(f"| {i} | {i * i} |" for i in range(40))
    text = "intro " * 200 + "\n\n" + code + "\n\n" + "middle " * 200 + "\n\n" + table + "\n\nend"
    parts = blocks.split_markdown(text, limit=1500)
    assert any(code in p for p in parts)
    assert any(table in p for p in parts)
    assert all(_fences_balanced(p) for p in parts)


def test_oversized_code_block_is_split_with_fences_reopened():
    code = "```sql\n" + "\n".join(f"SELECT {i} FROM t;" for i in range(400)) + "\n```"
    parts = blocks.split_markdown(code, limit=1000)
    assert len(parts) > 3
    for part in parts:
        assert len(part) <= 1000
        assert part.startswith("```sql") and part.rstrip().endswith("```")
        assert _fences_balanced(part)


def test_oversized_table_repeats_its_header():
    table = "| name | phone |\n|---|---|\n" + "\n".join(f"| Center {i} | 512-555-{i:04d} |" for i in range(300))
    parts = blocks.split_markdown(table, limit=1200)
    assert len(parts) > 3
    assert all(p.startswith("| name | phone |\n|---|---|") and len(p) <= 1200 for p in parts)


def test_answer_messages_put_numbered_sources_notice_and_feedback_on_the_last_part():
    refs = [Reference(source="a.md", title="Eligibility", section="Income", url="https://x.org/a"),
            Reference(source="b.pdf", title="Rates <2025>", section="")]
    value = blocks.feedback_value("abc", "knowledge", refs)
    messages = blocks.answer_messages("para\n\n" * 5000, refs, notice="No LLM configured", value=value)
    assert len(messages) > 1
    assert all(m[0]["type"] == "markdown" for m in messages)
    assert sum(len(b["text"]) for b in messages[0] if b["type"] == "markdown") <= 12000
    last = messages[-1]
    sources = next(b for b in last if b.get("block_id") == "askdesk_sources")["elements"][0]["text"]
    assert "[1] <https://x.org/a|Eligibility — Income>" in sources
    assert "[2] Rates &lt;2025&gt;" in sources
    assert any("No LLM configured" in json.dumps(b) for b in last)
    actions = next(b for b in last if b["type"] == "actions")
    assert [e["action_id"] for e in actions["elements"]] == ["feedback_up", "feedback_down"]
    assert all("askdesk_sources" not in json.dumps(m) for m in messages[:-1])


def test_feedback_value_fits_slack_button_limit():
    refs = [Reference(source="s" * 400 + str(i)) for i in range(8)]
    value = blocks.feedback_value("id", "knowledge", refs)
    assert len(value) <= 2000
    assert json.loads(value)["a"] == "id"


def test_record_blocks_are_compact_and_shareable():
    from agent.capabilities.base import Command, CommandResult, Detail, RecordView

    views = [RecordView(id=str(i), title=f"Center {i} <!channel>", details=[
        Detail(text="1 MAIN ST, Austin, 78702"), Detail(text="512-555-0100", icon="phone"),
        Detail(text="ages: infant, toddler"), Detail(text=f"{1.234 * i:.1f} mi")]) for i in range(12)]
    command = Command(name="facility", capability="facility", title="licensed facilities", usage="",
                      record="facility", records="facilities")
    result = CommandResult(command="facility", text="infant care near 78702", records=views, total=30,
                           summary="infant care · within 10 mi of 78702")
    out = blocks.record_blocks(result, command, shareable=True)
    text = json.dumps(out)
    assert "*Facilities:*" in text and "Center 0" in text and ":telephone_receiver: 512-555-0100" in text
    assert "ages: infant, toddler" in text and "2.5 mi" in text and "1 MAIN ST, Austin, 78702" in text
    assert "<!channel>" not in text and "&lt;!channel&gt;" in text  # record text is escaped
    assert "Center 10" not in text and "Showing 10 of 30" in text
    assert out[-1]["elements"][0]["action_id"] == blocks.RECORDS_SHARE
    # the request to run again, and the language the result was said in (a Share says it in it too)
    assert json.loads(out[-1]["elements"][0]["value"]) == {"c": "facility", "l": "en", "q": "infant care near 78702"}
    shared = blocks.record_blocks(result, command, shareable=False, shared_by="U9")
    assert "<@U9>" in json.dumps(shared) and shared[-1]["type"] != "actions"




def test_history_strips_mentions_and_marks_bot_turns():
    raw = [
        {"ts": "1", "user": "U1", "text": "<@UBOT> what is CCS?"},
        {"ts": "2", "user": "UBOT", "bot_id": "B1", "text": "CCS is child care services."},
        {"ts": "3", "user": "U2", "text": "and <@UBOT|askdesk>   for a family of 6?"},
        {"ts": "4", "bot_id": "BOTHER", "subtype": "bot_message", "text": "another bot"},
    ]
    chat = to_chat(raw, "UBOT", "B1")
    assert [m.role for m in chat] == ["user", "assistant", "user", "assistant"]
    assert chat[0].content == "what is CCS?"
    assert chat[2].content == "and for a family of 6?"
    assert strip_mention("<@UBOT>", "UBOT") == ""


def test_askers_are_the_people_the_bot_answered_in_a_thread():
    raw = [
        {"ts": "1", "user": "U1", "text": "<@UBOT> what is CCS?"},
        {"ts": "2", "user": "UBOT", "bot_id": "B1", "text": "CCS is child care services."},
        {"ts": "3", "user": "U2", "text": "interesting"},
    ]
    assert askers(raw, "UBOT", "B1") == {"U1"}
    assert askers(raw[:1], "UBOT", "B1") == set()  # the bot has not answered yet



def test_manifest_declares_everything_the_bot_uses():
    from pathlib import Path

    manifest = safe_load((Path(__file__).resolve().parent.parent / "manifest.yml").read_text())
    events = set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert {"app_mention", "message.im", "message.channels", "message.groups", "message.mpim",
            "app_home_opened"} <= events
    assert "agent_view" in manifest["features"] and "assistant_view" not in manifest["features"]
    assert manifest["features"]["agent_view"]["agent_description"]
    assert all({"title", "message"} <= set(p) for p in manifest["features"]["agent_view"]["suggested_prompts"])
    scopes = set(manifest["oauth_config"]["scopes"]["bot"])
    # events and Web API methods the bot calls -> the scopes they need
    assert {"app_mentions:read", "im:history", "channels:history", "groups:history", "mpim:history", "chat:write",
            "assistant:write", "commands", "files:read"} <= scopes
    assert [c["command"] for c in manifest["features"]["slash_commands"]] == ["/facility", "/askdesk"]
    assert manifest["settings"]["interactivity"]["is_enabled"] is True
    assert manifest["settings"]["socket_mode_enabled"] is True
    assert manifest["features"]["bot_user"]["display_name"]
    assert manifest["features"]["app_home"]["messages_tab_enabled"] is True
