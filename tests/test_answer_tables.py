"""Tables come out whole on every surface (issue 34): parsed into header and rows
(agent/tables.py), shown as a Slack table block (or aligned monospace), a Teams card Table, a
rich table in the terminal, and every cut made for a surface's size limit falls between rows,
each piece with its header. The cut property is checked over many generated tables."""

from __future__ import annotations

import json
import random

import pytest
from slack_sdk.web.async_client import AsyncWebClient

from agent.capabilities.knowledge import compose, excerpt
from agent.knowledge.search import Passage
from agent.prompts import default_prompts
from agent.references import Reference
from agent.tables import Table, blocks, parse_table, tables
from agent.tools.base import ToolResult
from agent.answers import AnswerResult
from bot.slack.blocks import answer_messages, answer_parts, fallback_text, split_markdown
from bot.slack.reply import Features, SlackReply
from bot.teams.render import answer_activity
from tests.fakes.slack_api import FakeSlackAPI

WORDS = ["fee", "$95", "$2,001 to $25,000", "plus $11.50 for each additional $1,000", "**bold**", "a | pipe",
         "Tiền phí", "máximo", "10 business days", "x" * 120, "`code`", "<!channel>", "&amp;"]


def generated(seed: int) -> Table:
    rng = random.Random(seed)
    width = rng.randint(1, 6)
    header = tuple(f"Col {i} {rng.choice(WORDS)}" for i in range(width))
    rows = tuple(tuple(f"r{r}c{c} {rng.choice(WORDS)}" * rng.randint(1, 3) for c in range(width))
                 for r in range(rng.randint(1, 60)))
    return Table(header=header, rows=rows, align=tuple(rng.choice(["", "left", "right", "center"]) for _ in header))


def rows_of(text: str) -> list[tuple[str, ...]]:
    return [row for table in tables(text) for row in table.rows]


def test_a_table_reads_back_as_written():
    table = parse_table("| Total valuation | Permit fee |\n|---|--:|\n| $1 to $2,000 | **$95** (minimum) |\n| a \\| b |\n")
    assert table is not None and table.header == ("Total valuation", "Permit fee")
    assert table.rows == (("$1 to $2,000", "**$95** (minimum)"), ("a | b", ""))
    assert table.align == ("", "right")
    assert parse_table(table.markdown()) == table  # pipes escaped: the cell stays one cell
    assert table.plain_rows()[0] == ("$1 to $2,000", "$95 (minimum)")
    assert [line.rstrip() for line in table.monospace().splitlines()][2] == "$1 to $2,000     $95 (minimum)"


@pytest.mark.parametrize("seed", range(60))
def test_cutting_a_table_for_any_limit_never_cuts_a_row(seed):
    table = generated(seed)
    for limit in (50, 300, 1000, 4000):
        pieces = table.pieces(limit)
        assert all(p.header == table.header for p in pieces)
        assert [r for p in pieces for r in p.rows] == list(table.rows)
        assert all(len(p.markdown()) <= limit for p in pieces if len(p.rows) > 1)


@pytest.mark.parametrize("seed", range(40))
def test_slack_parts_of_a_long_answer_cut_its_tables_only_between_rows(seed):
    table = generated(seed)
    answer = f"Intro paragraph.\n\n{table.markdown()}\n\nAfter the table. " + "More words. " * 40
    for limit in (300, 1200, 8000):
        parts = split_markdown(answer, limit) if limit < 1000 else answer_parts(answer, limit)
        assert rows_of("\n\n".join(parts)) == list(table.rows)  # every row once, whole, in order
        for part in parts:
            for shown in tables(part):
                assert shown.header == table.header


def test_a_slack_message_has_one_table_block_where_the_table_stands_and_monospace_for_a_second():
    first = Table(header=("Family size", "Monthly"), rows=(("1", "$3,989"), ("2", "$5,216")))
    second = Table(header=("Age", "Rate"), rows=(("Infant", "$45.50"),))
    answer = f"Lead-in.\n\n{first.markdown()}\n\nBetween.\n\n{second.markdown()}\n\nEnd."
    [blocks_] = answer_messages(answer, [], notice=None, value=None)
    kinds = [b["type"] for b in blocks_]
    assert kinds == ["markdown", "table", "markdown"]
    table = blocks_[1]
    assert [[c["text"] for c in row] for row in table["rows"]] == [["Family size", "Monthly"], ["1", "$3,989"],
                                                                    ["2", "$5,216"]]
    assert "Between." in blocks_[2]["text"] and "```" in blocks_[2]["text"] and "Infant" in blocks_[2]["text"]
    assert "|---" not in json.dumps(blocks_)  # no raw Markdown table anywhere


def test_a_table_too_wide_for_a_table_block_is_aligned_monospace():
    wide = Table(header=tuple(f"c{i}" for i in range(25)), rows=(tuple(str(i) for i in range(25)),))
    [blocks_] = answer_messages(f"Wide:\n\n{wide.markdown()}", [], notice=None, value=None)
    assert [b["type"] for b in blocks_] == ["markdown"] and "```" in blocks_[0]["text"]


def test_slack_notification_text_is_cut_at_a_line_end():
    table = Table(header=("a", "b"), rows=tuple((f"row {i}", "x" * 40) for i in range(200)))
    text = fallback_text(table.markdown())
    assert len(text) <= 3000 and text.endswith("…")
    assert text[:-1].splitlines()[-1].endswith("|")  # the last line shown is a whole row


async def test_slack_posts_the_search_only_table_as_a_table_block_through_the_web_api():
    fake = await FakeSlackAPI().start()
    try:
        client = AsyncWebClient(token="xoxb-test", base_url=fake.api_url)
        reply = SlackReply(client, channel="C1", thread_ts="1.0", team_id="T1", streaming=False, features=Features())
        table = Table(header=("Total valuation", "Permit fee"),
                      rows=tuple((f"${i},001 to ${i + 1},000", f"${95 + i} plus $11.50 per $1,000") for i in range(30)))
        answer = f"Here are the most relevant passages:\n\n{table.markdown()}\n\n— *Fees* [1]"
        await reply.deliver(answer, [Reference(source="fees.md", title="Fees")], notice=None, value=None)
        [call] = fake.calls_to("chat.postMessage")
        block = next(b for b in call.args["blocks"] if b["type"] == "table")
        assert [c["text"] for c in block["rows"][-1]] == ["$29,001 to $30,000", "$124 plus $11.50 per $1,000"]
        assert len(block["rows"]) == 31
    finally:
        await fake.stop()


def test_teams_shows_an_answer_with_a_table_as_one_card_with_every_row():
    table = generated(7)
    answer = AnswerResult(answer=f"Lead-in.\n\n{table.markdown()}\n\n> a quoted line [1]", route="knowledge",
                          search_only=True, references=[Reference(source="a.md", title="A")])
    rendered = answer_activity(answer, notice="No model key.", feedback=True, sources_heading="Sources")
    body = rendered.activity.model_dump(by_alias=True, exclude_none=True)
    [attachment] = body["attachments"]
    card = attachment["content"]
    assert card["version"] == "1.5"
    kinds = [item["type"] for item in card["body"]]
    assert kinds[0] == "TextBlock" and "Table" in kinds
    shown = [tuple(cell["items"][0]["text"] for cell in row["cells"])
             for item in card["body"] if item["type"] == "Table" for row in item["rows"][1:]]
    assert len(shown) == len(table.rows)  # every row, none cut (cells rendered by teams_text)
    assert all(item["firstRowAsHeaders"] for item in card["body"] if item["type"] == "Table")
    texts = [item.get("text", "") for item in card["body"]]
    assert "a quoted line [1]" in texts and any("Sources" in t for t in texts) and any("No model key" in t for t in texts)
    assert "|---" not in json.dumps(card)


def test_teams_answer_without_a_table_stays_a_text_message():
    answer = AnswerResult(answer="Just text [1].", route="knowledge", references=[Reference(source="a.md")])
    rendered = answer_activity(answer, notice=None, feedback=False, sources_heading="Sources")
    assert rendered.activity.text.startswith("Just text") and not rendered.activity.attachments


def passage(text: str, **extra) -> Passage:
    fields = dict(source="building-permits.md", title="Building permits", section="Fees", score=1.0,
                  url="https://wvds.example/permits") | extra
    return Passage(text=text, **fields)


FEES = Table(header=("Total valuation", "Permit fee"), rows=(
    ("$1 to $2,000", "$95 (minimum fee)"),
    ("$2,001 to $25,000", "$95 for the first $2,000, plus $11.50 for each additional $1,000"),
    ("$25,001 to $50,000", "$359.50 for the first $25,000, plus $8.75 for each additional $1,000"),
    ("$50,001 to $100,000", "$578.25 for the first $50,000, plus $6.10 for each additional $1,000"),
    ("$100,001 and up", "$883.25 for the first $100,000, plus $4.90 for each additional $1,000")))


def test_the_search_only_answer_shows_the_pay_table_whole_not_flattened():
    """Issue 34: the right table was flattened into one line with raw `**` and `|---|` and cut
    after its second row."""
    text = ("Fees are based on the **total valuation** of the work. " * 8 + f"\n\n{FEES.markdown()}\n\n"
            + "Added to the permit fee: a plan review fee. " * 10)
    answer = compose(ToolResult(text="", data=[passage(text)]), default_prompts(), query="what is the permit fee").text
    assert rows_of(answer)[-len(FEES.rows):] == list(FEES.rows)  # the passage's table, every row
    assert "**total valuation**" in answer  # Markdown kept, not flattened into one line
    assert len(answer.splitlines()) > 10


QA = ("**Q4: Are there minimum work hour requirements?**\n\n**Answer:** Yes. Parents must work or attend "
      "school for at least an average of 25 hours per week.\n\n**Q5: How is self-employment income "
      "calculated?**\n\n**Answer:** Gross receipts minus the `Schedule C` expenses, averaged over months.")


@pytest.mark.parametrize("limit", range(10, len(QA), 3))
def test_a_passage_cut_short_never_leaves_a_bold_or_code_span_open(limit):
    """A cut inside "**Answer:**" showed "**Ans …": raw asterisks on every surface."""
    shown = excerpt(QA, limit)
    for line in shown.splitlines():
        assert line.count("**") % 2 == 0 and line.count("`") % 2 == 0, (limit, line)
        assert line == "…" or any(ch.isalnum() for ch in line) or not line.strip(), (limit, line)
    assert "Q4" in shown or limit < 15


def test_a_search_only_answer_prefers_the_section_around_the_match():
    context = f"Intro.\n\n{FEES.markdown()}"
    shown = excerpt(context)
    assert rows_of(shown) == list(FEES.rows)
    answer = compose(ToolResult(text="", data=[passage("| $1 to $2,000 | $95 |", context=context)]
                                if "context" in Passage.model_fields else []),
                     default_prompts(), query="fee").text
    if "context" in Passage.model_fields:  # the retrieval change that adds it may not be in yet
        assert rows_of(answer)[-len(FEES.rows):] == list(FEES.rows)


@pytest.mark.parametrize("seed", range(30))
def test_the_search_only_answer_never_cuts_a_row_whatever_its_length(seed):
    table = generated(seed)
    prose = "A sentence about the rules. " * random.Random(seed).randint(0, 80)
    found = [passage(f"{prose}\n\n{table.markdown()}\n\n{prose}", section=f"S{i}") for i in range(5)]
    answer = compose(ToolResult(text="", data=found), default_prompts(), query="rules fee").text
    original = set(table.rows)
    assert all(row in original for row in rows_of(answer))
    for block in blocks(answer):
        if isinstance(block, str):
            assert "|---" not in block  # no table left unparsed (half a table)


def test_the_terminal_draws_a_table_as_a_table(tmp_path):
    from rich.console import Console

    from bot.commands.live import print_markdown

    console = Console(file=open(tmp_path / "out.txt", "w"), width=100)
    print_markdown(console, f"Lead-in.\n\n{FEES.markdown()}")
    console.file.close()
    out = (tmp_path / "out.txt").read_text()
    assert "|---" not in out and "$100,001 and up" in out and "Total valuation" in out
    assert "─" in out  # rich's table rule


def test_a_streamed_answer_s_table_goes_in_the_stop_call_after_the_text_before_it():
    from bot.slack.blocks import stream_end

    text, blocks_ = stream_end(f"Lead-in.\n\n{FEES.markdown()}\n\nAfter the table.")
    assert text.strip() == "Lead-in."
    assert [b["type"] for b in blocks_] == ["table", "markdown"] and "After the table." in blocks_[1]["text"]
    assert len(blocks_[0]["rows"]) == len(FEES.rows) + 1
    assert stream_end("No table here.") == ("No table here.", [])


def test_a_teams_answer_too_large_for_one_message_goes_on_in_more_cards_cut_between_rows():
    big = Table(header=("Code", "Inspection", "Notes"),
                rows=tuple((str(1000 + i), f"Inspection {i}", "Call before 7:15 a.m. " * 3) for i in range(400)))
    answer = AnswerResult(answer=f"All inspection codes:\n\n{big.markdown()}\n\nBook in PermitLink.", route="knowledge",
                          search_only=True, references=[Reference(source="inspections.md", title="Inspections")])
    rendered = answer_activity(answer, notice=None, feedback=True, sources_heading="Sources")
    activities = [rendered.activity, *rendered.more]
    assert len(activities) > 1
    shown: list[list[str]] = []
    for activity in activities:
        body = json.dumps(activity.model_dump(by_alias=True, exclude_none=True), ensure_ascii=False)
        assert len(body) < 28_000  # a Teams message's size
        for attachment in activity.model_dump(by_alias=True, exclude_none=True)["attachments"]:
            for item in attachment["content"]["body"]:
                if item["type"] == "Table":
                    rows = [[c["items"][0]["text"] for c in row["cells"]] for row in item["rows"]]
                    assert rows[0] == ["Code", "Inspection", "Notes"]  # each piece with its header
                    shown.extend(rows[1:])
    assert [r[0] for r in shown] == [row[0] for row in big.rows]  # every row once, whole, in order
    assert "Book in PermitLink." in json.dumps(activities[-1].model_dump(by_alias=True, exclude_none=True))
