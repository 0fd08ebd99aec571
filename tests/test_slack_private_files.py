"""Slack: answers only the asker sees and files attached to a question (issue 20). The real Bolt
app against the recording fake Slack Web API, which also hosts files the way Slack does
(`url_private_download`, bot token required); the real Askdesk and the fake LLM server."""

from __future__ import annotations

import json
import time

from tests.fakes.pdf import make_pdf, report_pages
from tests.fakes.slack_api import message_event
from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    BOT_ID,
    BOT_USER_ID,
    KB_DOC,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)

NEEDLE = "The travel reimbursement deadline for field staff is 30 June 2026."


def ephemeral_texts(fake) -> list[str]:
    return [c.args.get("text", "") + json.dumps(c.args.get("blocks") or []) for c in fake.calls_to("chat.postEphemeral")]


def public_posts(fake) -> list[str]:
    """What everyone in the channel sees from the bot: posted, streamed or updated messages."""
    return [c.method for c in fake.calls if c.method in ("chat.postMessage", "chat.update", "chat.startStream")]


# --- private answers ------------------------------------------------------------------------------

async def test_in_a_private_channel_a_mention_is_answered_ephemerally_and_stays_out_of_the_thread(
        make_bot, fake_slack, llm):
    llm.script(AGENT, final("You have 12 days of leave left [1].", KB_DOC), final("Public answer.", KB_DOC))
    slack = await make_bot(channel_answer_modes={"C0001": "private"})
    root = "1700100000.000100"
    fake_slack.add_thread("C0001", [{"ts": root, "user": "U0001", "text": f"<@{BOT_USER_ID}> how much leave do I have?"}])
    await slack.mention("how much leave do I have?", ts=root)
    await slack.bot.drain()

    [call] = fake_slack.calls_to("chat.postEphemeral")
    assert call.args["user"] == "U0001" and call.args["channel"] == "C0001" and call.args["thread_ts"] == root
    blocks = json.dumps(call.args["blocks"])
    assert "12 days of leave" in blocks and "Only you can see this answer" in blocks and "feedback_up" in blocks
    assert public_posts(fake_slack) == [] and bot_messages(fake_slack, "C0001", root) == []

    # someone asks in the same thread in a public channel: the private answer is not in the history
    await slack.mention("what is the income limit?", ts="1700100000.000300", thread_ts=root, channel="C0001",
                        user="U0002")
    await slack.bot.drain()
    later = llm.requests_for(AGENT)[-1].text
    assert "how much leave do I have?" in later and "12 days of leave" not in later
    assert len(fake_slack.calls_to("chat.postEphemeral")) == 2  # still private in this channel


async def test_privately_before_a_question_answers_only_the_asker_in_any_channel(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Your family of 3 pays $45 a week [1].", KB_DOC))
    slack = await make_bot()
    await slack.mention("privately: what does a family of 3 pay?", ts="1700100100.000100")
    await slack.bot.drain()
    assert any("$45 a week" in t for t in ephemeral_texts(fake_slack))
    assert public_posts(fake_slack) == []
    sent = llm.requests_for(AGENT)[0].text
    assert "what does a family of 3 pay?" in sent and "privately" not in sent  # the word is not the question


async def test_private_slash_command_answers_through_the_response_url_and_is_stored_nowhere(
        make_bot, fake_slack, llm):
    llm.script(AGENT, final("Families of 4 qualify up to the income limit [1].", KB_DOC))
    slack = await make_bot()
    assert await slack.command("who is eligible by income?", command="/askdesk", hook="priv") == 200
    assert "Thinking" in slack.last_body  # acked at once, privately
    [response] = await fake_slack.wait_for("response_url:priv")
    await slack.bot.drain()
    payload = response.args
    assert payload["response_type"] == "ephemeral" and payload["replace_original"] is True
    assert "Families of 4 qualify" in json.dumps(payload["blocks"]) and "Only you can see" in json.dumps(payload["blocks"])
    assert public_posts(fake_slack) == [] and fake_slack.calls_to("chat.postEphemeral") == []
    assert "who is eligible by income?" in llm.requests_for(AGENT)[0].text
    askdesk = slack.bot.services.askdesk
    memory = askdesk.state
    assert (await memory.load("slack", "C0001:private:U0001")).messages == []


async def test_private_slash_command_without_a_question_shows_its_usage(make_bot, fake_slack):
    slack = await make_bot()
    assert await slack.command("", command="/askdesk", hook="empty") == 200
    assert "/askdesk how much leave do I have?" in slack.last_body
    await slack.bot.drain()
    assert fake_slack.calls_to("response_url:empty") == []


async def test_mentions_only_channel_does_not_answer_the_askers_unmentioned_follow_up(make_bot, fake_slack, llm):
    slack = await make_bot(channel_answer_modes={"C0009": "mentions"})
    thread = fake_slack.add_thread("C0009", [
        {"ts": "1700100200.000100", "user": "U0001", "text": f"<@{BOT_USER_ID}> who is eligible?"},
        {"ts": "1700100200.000200", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "Families under the limit."},
    ])
    await slack.send_event(message_event("and for a family of 6?", channel="C0009", ts="1700100200.000300",
                                         thread_ts=thread))
    await slack.bot.drain()
    assert llm.requests_for(AGENT) == [] and bot_messages(fake_slack, "C0009", thread)[-1]["text"] == "Families under the limit."


# --- attached files ---------------------------------------------------------------------------------

async def test_a_pdf_attached_to_a_mention_is_downloaded_with_the_bot_token_and_answers(make_bot, fake_slack, llm):
    llm.script(AGENT, final("The deadline is 30 June 2026 [1].", "ops-report.pdf"))
    slack = await make_bot()
    pdf = fake_slack.add_file("ops-report.pdf", make_pdf(report_pages(20, needle_page=14, needle=NEEDLE)),
                              "application/pdf")
    ts = "1700100300.000100"
    event = message_event(f"<@{BOT_USER_ID}> when is the travel reimbursement deadline?", ts=ts, type="app_mention",
                          files=[pdf], upload=False)
    await slack.send_event(event)
    await slack.bot.drain()
    [download] = fake_slack.calls_to("files:download")
    assert download.args["_token"] == "xoxb-test"
    assert NEEDLE in llm.requests_for(AGENT)[0].text
    [reply] = bot_messages(fake_slack, "C0001", ts)
    assert "30 June 2026" in reply["text"] and "ops-report.pdf" in json.dumps(reply["blocks"])  # cited as a source


async def test_an_image_only_dm_gets_one_line_about_the_image_not_your_message_is_empty(make_bot, fake_slack, llm):
    slack = await make_bot()
    image = fake_slack.add_file("whiteboard.png", b"\x89PNG\r\n\x1a\n" + bytes(200), "image/png")
    event = message_event("", channel="D0001", ts="1700100400.000100", channel_type="im", subtype="file_share",
                          files=[image])
    await slack.send_event(event)
    await slack.bot.drain()
    said = " ".join(fake_slack.posted_texts())
    assert "whiteboard.png" in said and "can't read images" in said
    assert "empty" not in said.lower()
    assert fake_slack.calls_to("files:download") == [] and llm.requests_for(AGENT) == []  # nothing fetched, no model


async def test_a_50_mb_file_is_refused_by_its_declared_size_before_any_download(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Families of 4 qualify [1].", KB_DOC))
    slack = await make_bot()
    big = fake_slack.add_file("scans.pdf", b"%PDF-1.4 small", "application/pdf", size=50_000_000)
    started = time.perf_counter()
    await slack.send_event(message_event(f"<@{BOT_USER_ID}> who is eligible?", ts="1700100500.000100",
                                         type="app_mention", files=[big]))
    note = await _first_text_containing(fake_slack, "larger than the 10 MB")
    assert time.perf_counter() - started < 1.0 and "scans.pdf" in note
    await slack.bot.drain()
    assert fake_slack.calls_to("files:download") == []
    assert "Families of 4 qualify" in bot_messages(fake_slack, "C0001", "1700100500.000100")[0]["text"]


async def test_bad_files_get_one_line_each_and_the_question_is_still_answered(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Families of 4 qualify [1].", KB_DOC))
    slack = await make_bot(file_max_mb=1)
    broken = fake_slack.add_file("broken.pdf", b"%PDF-1.4\n1 0 obj <</Type /Catalog", "application/pdf")
    sneaky = fake_slack.add_file("huge.txt", b"a" * 3_000_000, "text/plain", size=1000, chunked=True)  # lies about its size
    gated = fake_slack.add_file("notes.md", b"# Notes", "text/markdown")
    gated["url_private_download"] = gated["url_private_download"].replace("127.0.0.1", "localhost")  # not Slack's host
    ts = "1700100600.000100"
    await slack.send_event(message_event(f"<@{BOT_USER_ID}> who is eligible?", ts=ts, type="app_mention",
                                         files=[broken, sneaky, gated]))
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "C0001", ts)
    notes, answer = reply["text"].split("\n\n", 1)
    assert notes.splitlines() == [
        "I couldn't read broken.pdf (unreadable PDF), so I answered without it.",
        "huge.txt is larger than the 1 MB I read, so I skipped it.",
        "I couldn't download notes.md, so I answered without it — try attaching it again.",
    ]
    assert answer.startswith("Families of 4 qualify")
    tokens = [c.args["_token"] for c in fake_slack.calls_to("files:download")]
    assert tokens == ["xoxb-test", "xoxb-test"]  # the token never went to the other host


async def _first_text_containing(fake, needle: str, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for text in fake.posted_texts():
            if needle in text:
                return text
        for message in fake.streams.values():
            if needle in message.get("text", ""):
                return message["text"]
        for messages in fake.threads.values():
            for message in messages:
                if needle in message.get("text", ""):
                    return message["text"]
        await __import__("asyncio").sleep(0.01)
    raise AssertionError(f"no message with {needle!r}: {fake.methods()}")
