"""Hostile and unlucky Slack traffic (issue 12): unsigned or malformed requests, Slack's own
API failing mid-answer, and logs that must never carry message text. Everything runs through
the real HTTP endpoint, Bolt and slack_sdk against the fake Slack API."""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time

import pytest

from tests.fakes.slack_api import BOT_USER_ID, event_envelope, message_event, signed_headers
from tests.test_slack_bot import AGENT, KB_DOC, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401

MARKER = "PLUM-ZEBRA-4417"
# The Slack side's loggers (model SDKs' own debug logging is the agent's concern)
SLACK_LOGGERS = ("slack_bolt", "slack_sdk", "askdesk.slack", "askdesk.serve", "aiohttp")


def tracebacks(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.exc_info] + (["Traceback"] if "Traceback" in caplog.text else [])


# --- item 2: unauthenticated and malformed requests ---------------------------------------------


async def test_unsigned_and_garbled_requests_get_401_without_a_traceback(make_bot, fake_slack, caplog):
    slack = await make_bot()
    caplog.set_level(logging.DEBUG)
    body = json.dumps(event_envelope(message_event(f"<@{BOT_USER_ID}> hi", ts="1700002000.000100", type="app_mention")))
    assert await slack.post(body, {"Content-Type": "application/json"}) == 401  # no X-Slack-* headers at all
    stamp_words = dict(signed_headers(body), **{"X-Slack-Request-Timestamp": "yesterday"})
    assert await slack.post(body, stamp_words) == 401
    no_signature = {k: v for k, v in signed_headers(body).items() if k != "X-Slack-Signature"}
    assert await slack.post(body, no_signature) == 401
    assert await slack.post("payload=%7B", {"Content-Type": "application/x-www-form-urlencoded"}) == 401
    await slack.bot.drain()
    assert tracebacks(caplog) == []
    assert [m for m in fake_slack.methods() if m != "auth.test"] == []


async def test_signed_but_malformed_bodies_are_refused_without_a_traceback(make_bot, fake_slack, caplog):
    slack = await make_bot()
    caplog.set_level(logging.DEBUG)
    bad_json = '{"type": "event_callback", "event": '
    null_event = json.dumps({"type": "event_callback", "event_id": "EvNull", "team_id": "T0001", "event": None})
    not_an_object = json.dumps(["event_callback"])
    bad_payload = "payload=%7Bnot-json"
    for body, kind in [(bad_json, "application/json"), (null_event, "application/json"),
                       (not_an_object, "application/json"), (bad_payload, "application/x-www-form-urlencoded")]:
        status = await slack.post(body, signed_headers(body, content_type=kind))
        assert 400 <= status < 500, (body, status)
    await slack.bot.drain()
    assert tracebacks(caplog) == []


# --- item 8: Slack's API failing ------------------------------------------------------------------------


async def test_transient_stream_failure_degrades_one_message_not_the_workspace(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Posted this once.", KB_DOC), final("Streamed again.", KB_DOC))
    fake_slack.script("chat.startStream", status=500, body={"ok": False, "error": "internal_error"})
    slack = await make_bot()
    await slack.mention("who is eligible?", ts="1700002100.000100")
    await slack.bot.drain()
    [first] = bot_messages(fake_slack, "C0001", "1700002100.000100")
    assert "Posted this once." in json.dumps(first["blocks"])  # this message fell back to post + update
    await slack.mention("and for 5 people?", ts="1700002101.000100")
    await slack.bot.drain()
    assert len(fake_slack.calls_to("chat.startStream")) >= 2  # the next answer streams again
    [second] = bot_messages(fake_slack, "C0001", "1700002101.000100")
    assert "Streamed again." in second["text"]


async def test_streaming_refusal_pauses_the_workspace_for_a_cool_down(make_bot, fake_slack, llm):
    llm.script(AGENT, final("One.", KB_DOC), final("Two.", KB_DOC), final("Three.", KB_DOC))
    fake_slack.script("chat.startStream", body={"ok": False, "error": "feature_not_enabled"})
    slack = await make_bot()
    await slack.mention("who is eligible?", ts="1700002150.000100")
    await slack.bot.drain()
    await slack.mention("who is eligible?", ts="1700002151.000100")
    await slack.bot.drain()
    assert len(fake_slack.calls_to("chat.startStream")) == 1  # refused: not asked again at once
    slack.bot.services.answering.features.no_streaming._off.clear()  # the cool-down is over
    await slack.mention("who is eligible?", ts="1700002152.000100")
    await slack.bot.drain()
    assert len(fake_slack.calls_to("chat.startStream")) == 2


async def test_stream_broken_mid_answer_ends_in_an_apology_with_a_reference(make_bot, fake_slack, llm, caplog):
    llm.script(AGENT, final("Never fully delivered.", KB_DOC))
    fake_slack.script("chat.appendStream", status=500, body={"ok": False, "error": "internal_error"}, times=20)
    fake_slack.script("chat.stopStream", status=500, body={"ok": False, "error": "internal_error"}, times=20)
    slack = await make_bot()
    await slack.mention("who is eligible?", ts="1700002200.000100")
    await slack.bot.drain()
    apology = fake_slack.calls_to("chat.postMessage")[-1].args
    ref = re.search(r"reference ([0-9a-f]{12})", apology["text"])
    assert apology["thread_ts"] == "1700002200.000100" and ref
    assert f"reference {ref.group(1)}" in caplog.text  # the log line carries the same id
    assert tracebacks(caplog) == []


async def test_slack_down_mid_answer_leaves_a_reference_and_no_traceback(make_bot, fake_slack, llm, caplog):
    llm.script(AGENT, final("Nobody will see this.", KB_DOC))
    slack = await make_bot()
    stopping: list[asyncio.Task] = []

    def outage(call) -> None:  # Slack goes away right after the first progress update
        if call.method == "chat.startStream" and not stopping:
            stopping.append(asyncio.get_running_loop().create_task(fake_slack.stop()))

    fake_slack.on_record = outage
    await slack.mention("who is eligible?", ts="1700002300.000100")
    await slack.bot.drain(timeout=30)
    await asyncio.gather(*stopping)
    assert re.search(r"reference [0-9a-f]{12}", caplog.text)
    assert tracebacks(caplog) == []


# --- item 9: no message text in logs, at any level -----------------------------------------------


async def test_message_text_never_reaches_the_logs(make_bot, fake_slack, llm, caplog):
    llm.script_default(AGENT, final(f"Answer about {MARKER}.", KB_DOC))  # the mention and the DM
    slack = await make_bot()
    caplog.set_level(logging.DEBUG)
    await slack.mention(f"who is eligible {MARKER}?", ts="1700002400.000100")
    await slack.dm(f"and {MARKER} in a DM", ts="1700002401.000100")
    forged = json.dumps(event_envelope(message_event(f"<@{BOT_USER_ID}> {MARKER}", ts="1700002402.000100")))
    await slack.post(forged, signed_headers(forged, secret="wrong"))
    form = f"command=%2Ffacility&text={MARKER}&user_id=U0001&team_id=T0001"
    await slack.post(form, signed_headers(form, secret="wrong", content_type="application/x-www-form-urlencoded"))
    await slack.post(form, signed_headers(form, timestamp=int(time.time()) - 3600,
                                          content_type="application/x-www-form-urlencoded"))
    await slack.bot.drain()
    assert bot_messages(fake_slack, "C0001", "1700002400.000100")  # it did answer
    slack_side = [r.getMessage() for r in caplog.records if r.name.startswith(SLACK_LOGGERS)]
    assert slack_side and not [m for m in slack_side if MARKER in m]
