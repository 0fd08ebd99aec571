"""The Slack bot end to end, offline: signed requests through Bolt's aiohttp endpoint, the
real `Askdesk` (fake LLM server, embedded Qdrant with a small KB subset) and a recording
fake Slack Web API behind the bot's real slack_sdk client."""

from __future__ import annotations

import asyncio
import csv
import json
import shutil
import time
from urllib.parse import urlencode

import pytest

from agent.config import Settings
from agent.runtime import Runtime
from agent.turn.service import Askdesk
from tests.conftest import SAMPLE_FACILITIES, SAMPLE_KB, seed_embeddings
from tests.fakes.slack_api import BOT_ID, BOT_USER_ID, FakeSlackAPI, SlackHarness, message_event, signed_headers

from tests.knowledge_fixtures import SMALL_KB_DOC as KB_DOC
AGENT = "openai"  # agent model queue in the fake LLM server
ROUTER = "groq"


def search_step(query: str = "income eligibility") -> dict:
    return {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context", "arguments": {"query": query}}]}}


def final(answer: str, *sources: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "confidence": 0.9,
                     "references": [{"source": s} for s in sources]}}


@pytest.fixture
async def fake_slack():
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def make_bot(kb_runtime, fake_slack, tmp_path):
    """Build the bot with setting overrides; the Askdesk is created after the env is set."""
    made: list[tuple[SlackHarness, Askdesk]] = []

    async def make(**overrides) -> SlackHarness:
        base = dict(data_dir=tmp_path / "data", agent_model="openai/gpt-4.1-mini",
                    router_model="groq/llama-3.1-8b-instant", llm_max_retries=0)
        settings = Settings(**(base | overrides))
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        harness = await SlackHarness.start(fake_slack, settings, askdesk, kb_runtime)
        made.append((harness, askdesk))
        return harness

    yield make
    for harness, askdesk in made:
        await harness.close()
        await askdesk.close()


@pytest.fixture
def llm(llm_server):
    """The fake LLM with a router that always routes to the knowledge base (when consulted)."""
    llm_server.script_default(ROUTER, {"route": "knowledge", "search_query": None})
    return llm_server


def bot_messages(fake: FakeSlackAPI, channel: str, thread_ts: str) -> list[dict]:
    return [m for m in fake.threads.get((channel, thread_ts), []) if m.get("bot_id") == BOT_ID]


# --- channels ----------------------------------------------------------------------------------


async def test_mention_gets_streamed_threaded_answer_with_sources(make_bot, fake_slack, llm):
    llm.script(AGENT, search_step(), final("Families of 4 qualify up to the income limit [1].", KB_DOC))
    slack = await make_bot()
    started = time.perf_counter()
    assert await slack.mention("who is eligible by income?", ts="1700000100.000100") == 200
    assert time.perf_counter() - started < 1.0  # acked before the agent's work
    await slack.bot.drain()

    [reply] = bot_messages(fake_slack, "C0001", "1700000100.000100")
    assert reply["thread_ts"] == "1700000100.000100"  # in the mention's thread, not the channel
    assert "Families of 4 qualify" in reply["text"]
    blocks = json.dumps(reply["blocks"])
    assert "[1]" in blocks and "Income Eligibility" in blocks  # numbered source with its title
    assert "feedback_up" in blocks and "feedback_down" in blocks
    start = fake_slack.calls_to("chat.startStream")[0].args
    assert start["recipient_user_id"] == "U0001" and start["recipient_team_id"] == "T0001"
    # progress appeared in the stream as tasks ("Thinking…", then the tool's line), all completed at the end
    tasks = [c for call in fake_slack.calls if "Stream" in call.method for c in call.args.get("chunks") or []
             if c["type"] == "task_update"]
    assert {(t["title"], t["status"]) for t in tasks} >= {
        ("Thinking…", "in_progress"), ("Searching the knowledge base…", "in_progress"),
        ("Searching the knowledge base…", "complete")}
    # the question reached the model without the mention
    request = llm.requests_for(AGENT)[0]
    assert "who is eligible by income?" in request.text and f"<@{BOT_USER_ID}>" not in request.text


async def test_streaming_refused_falls_back_to_post_then_update(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Posted, not streamed.", KB_DOC), final("Second answer.", KB_DOC))
    fake_slack.script("chat.startStream", body={"ok": False, "error": "feature_not_enabled"})
    slack = await make_bot()
    await slack.mention("who is eligible?", ts="1700000110.000100")
    await slack.bot.drain()
    replies = bot_messages(fake_slack, "C0001", "1700000110.000100")
    assert len(replies) == 1 and "Posted, not streamed." in json.dumps(replies[0]["blocks"])
    assert fake_slack.calls_to("chat.update")  # the progress placeholder became the answer
    # the workspace is remembered: the next answer does not try to stream again
    await slack.mention("and for 5 people?", ts="1700000111.000100")
    await slack.bot.drain()
    assert len(fake_slack.calls_to("chat.startStream")) == 1


async def test_follow_up_in_thread_uses_history_from_conversations_replies(make_bot, fake_slack, llm):
    thread = fake_slack.add_thread("C0001", [
        {"ts": "1700000200.000100", "user": "U0001", "text": f"<@{BOT_USER_ID}> what is the income limit for a family of 4?"},
        {"ts": "1700000200.000200", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "It is $7,000 a month for a family of 4."},
    ])
    llm.script(AGENT, final("For a family of 6 the limit is higher.", KB_DOC))
    slack = await make_bot()
    await slack.mention("what about a family of 6?", ts="1700000200.000300", thread_ts=thread)
    await slack.bot.drain()

    [replies_call] = fake_slack.calls_to("conversations.replies")
    assert replies_call.args["ts"] == thread
    [request] = llm.requests_for(AGENT)
    roles = [(m["role"], m["content"]) for m in request.body["messages"]]
    assert ("assistant", "It is $7,000 a month for a family of 4.") in roles
    assert ("user", "what is the income limit for a family of 4?") in roles  # mention stripped
    assert "For a family of 6" in bot_messages(fake_slack, "C0001", thread)[-1]["text"]


async def test_askers_follow_up_is_answered_without_a_new_mention(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Follow-up answered.", KB_DOC))
    slack = await make_bot()
    thread = fake_slack.add_thread("C0001", [
        {"ts": "1700000250.000100", "user": "U0001", "text": f"<@{BOT_USER_ID}> what is the income limit?"},
        {"ts": "1700000250.000200", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "It is $7,000 a month."},
    ])
    # someone else chiming in without a mention is not a question for the bot
    assert await slack.send_event(message_event("nice", ts="1700000250.000300", thread_ts=thread, user="U0002")) == 200
    await slack.bot.drain()
    assert bot_messages(fake_slack, "C0001", thread)[-1]["text"] == "It is $7,000 a month."
    # the person who asked continues without mentioning it
    await slack.send_event(message_event("and for a family of 6?", ts="1700000250.000400", thread_ts=thread))
    await slack.bot.drain()
    assert "Follow-up answered." in bot_messages(fake_slack, "C0001", thread)[-1]["text"]
    [request] = llm.requests_for(AGENT)
    assert "and for a family of 6?" in request.text and "nice" not in request.text.split("and for a family")[1]


async def test_follow_ups_need_a_mention_when_turned_off(make_bot, fake_slack):
    slack = await make_bot(slack_follow_ups=False)
    thread = fake_slack.add_thread("C0001", [
        {"ts": "1700000255.000100", "user": "U0001", "text": f"<@{BOT_USER_ID}> hi"},
        {"ts": "1700000255.000200", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "Hello"},
    ])
    await slack.send_event(message_event("and another thing", ts="1700000255.000300", thread_ts=thread))
    await slack.bot.drain()
    assert [m for m in fake_slack.methods() if m != "auth.test"] == []  # not even a history read


async def test_thread_follow_up_without_mention_when_configured(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Answered without a mention.", KB_DOC))
    slack = await make_bot(slack_thread_requires_mention=False)
    thread = fake_slack.add_thread("C0001", [
        {"ts": "1700000260.000100", "user": "U0001", "text": f"<@{BOT_USER_ID}> hi"},
        {"ts": "1700000260.000200", "user": BOT_USER_ID, "bot_id": BOT_ID, "text": "Hello"},
    ])
    await slack.send_event(message_event("and what about income?", ts="1700000260.000300", thread_ts=thread))
    # a thread the bot is not part of stays silent
    other = fake_slack.add_thread("C0001", [{"ts": "1700000261.000100", "user": "U0002", "text": "lunch?"}])
    await slack.send_event(message_event("yes", ts="1700000261.000200", thread_ts=other))
    await slack.bot.drain()
    assert "Answered without a mention." in bot_messages(fake_slack, "C0001", thread)[-1]["text"]
    assert bot_messages(fake_slack, "C0001", other) == []


async def test_retries_and_double_delivery_answer_once(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Only once.", KB_DOC))
    slack = await make_bot()
    ts = "1700000300.000100"
    text = f"<@{BOT_USER_ID}> who is eligible?"
    mention = message_event(text, ts=ts, type="app_mention")
    message = message_event(text, ts=ts)
    results = await asyncio.gather(
        slack.send_event(mention, event_id="EvMention"),
        slack.send_event(message, event_id="EvMessage"),
        slack.send_event(mention, event_id="EvMention", retry_num=1),
    )
    assert results == [200, 200, 200]
    await slack.send_event(mention, event_id="EvMention", retry_num=2)
    await slack.bot.drain()
    assert len(bot_messages(fake_slack, "C0001", ts)) == 1
    assert len(llm.requests_for(AGENT)) == 1


async def test_forged_signature_and_stale_timestamp_are_rejected(make_bot, fake_slack):
    slack = await make_bot()
    event = message_event(f"<@{BOT_USER_ID}> hi", ts="1700000400.000100", type="app_mention")
    assert await slack.send_event(event, secret="not-the-secret") == 401
    assert await slack.send_event(event, timestamp=int(time.time()) - 60 * 10) == 401
    form = urlencode({"command": "/facility", "text": "78702", "user_id": "U0001", "team_id": "T0001",
                      "response_url": fake_slack.response_url("forged")})
    forged = signed_headers(form, secret="not-the-secret", content_type="application/x-www-form-urlencoded")
    assert await slack.post(form, forged) == 401
    await slack.bot.drain()
    # nothing was answered or posted (a token check, auth.test, is not an answer)
    assert [m for m in fake_slack.methods() if m != "auth.test"] == []


async def test_bots_self_edits_and_system_messages_are_ignored(make_bot, fake_slack):
    slack = await make_bot()
    ignored = [
        message_event(f"<@{BOT_USER_ID}> from a bot", ts="1700000500.000100", bot_id="BOTHER", subtype="bot_message"),
        message_event(f"<@{BOT_USER_ID}> myself", ts="1700000500.000200", user=BOT_USER_ID, bot_id=BOT_ID),
        message_event(f"<@{BOT_USER_ID}> edited", ts="1700000500.000300", subtype="message_changed"),
        message_event("joined", ts="1700000500.000400", subtype="channel_join"),
        message_event("no mention in a channel", ts="1700000500.000500"),
        message_event(f"<@{BOT_USER_ID}> edited mention", ts="1700000500.000600", type="app_mention",
                      edited={"user": "U0001", "ts": "1700000501.0"}),
    ]
    for event in ignored:
        assert await slack.send_event(event) == 200
    await slack.bot.drain()
    assert [m for m in fake_slack.methods() if m != "auth.test"] == []


async def test_channel_allowlist_and_per_channel_collection(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Allowed channel answer.", KB_DOC))
    slack = await make_bot(slack_channels=["CALLOWED"], slack_channel_collections={"CALLOWED": "kb"})
    await slack.mention("who is eligible?", ts="1700000600.000100", channel="COTHER")
    await slack.mention("who is eligible?", ts="1700000600.000200", channel="CALLOWED")
    await slack.bot.drain()
    [note] = fake_slack.calls_to("chat.postEphemeral")
    assert note.args["channel"] == "COTHER" and "not enabled in this channel" in note.args["text"]
    assert bot_messages(fake_slack, "COTHER", "1700000600.000100") == []
    assert "Allowed channel answer." in bot_messages(fake_slack, "CALLOWED", "1700000600.000200")[0]["text"]


# --- DMs and the assistant pane -------------------------------------------------------------------


async def test_dm_is_answered_in_its_thread_with_the_agent_status(make_bot, fake_slack, llm):
    llm.script(AGENT, final("DM answer.", KB_DOC))
    slack = await make_bot()
    await slack.dm("who is eligible?", ts="1700000700.000100")
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "D0001", "1700000700.000100")
    assert "DM answer." in reply["text"]
    # agent messaging experience: the top-level message is the thread, its status shows progress
    status = fake_slack.calls_to("assistant.threads.setStatus")[0].args
    assert status["thread_ts"] == "1700000700.000100" and status["loading_messages"] == ["Thinking…"]


async def test_messages_tab_opened_sets_prompts_without_thread_and_welcomes_once(make_bot, fake_slack):
    slack = await make_bot(slack_suggested_prompts=["Who is eligible?", "Infant care near 78702"])
    opened = {"type": "app_home_opened", "user": "U0001", "channel": "D0001", "tab": "messages",
              "event_ts": "1700000800.000100"}
    assert await slack.send_event(opened) == 200
    assert await slack.send_event(dict(opened, event_ts="1700000801.000100")) == 200
    assert await slack.send_event(dict(opened, tab="home", event_ts="1700000802.000100")) == 200
    await slack.bot.drain()
    first, second = fake_slack.calls_to("assistant.threads.setSuggestedPrompts")
    assert [p["message"] for p in first.args["prompts"]] == ["Who is eligible?", "Infant care near 78702"]
    assert first.args["channel_id"] == "D0001" and "thread_ts" not in first.args  # agent apps: no thread_ts
    [welcome] = fake_slack.calls_to("chat.postMessage")  # an empty DM gets one welcome, not one per visit
    assert welcome.args["channel"] == "D0001" and "<@U0001>" in welcome.args["text"]
    assert "thread_ts" not in welcome.args


async def test_without_configured_prompts_they_come_from_the_knowledge_base_and_the_registry(make_bot, fake_slack):
    """No setting and no domain file: questions about the biggest documents, then the registry
    command's example (from its declaration) — never the demo's texts from code."""
    slack = await make_bot()
    opened = {"type": "app_home_opened", "user": "U0001", "channel": "D0001", "tab": "messages",
              "event_ts": "1700000810.000100"}
    assert await slack.send_event(opened) == 200
    await slack.bot.drain()
    [call] = fake_slack.calls_to("assistant.threads.setSuggestedPrompts")
    prompts = [p["message"] for p in call.args["prompts"]]
    assert prompts[0].startswith("What does “") and prompts[-1] == "infant care near 78702"
    assert not any("family of 3" in p for p in prompts)


async def test_the_domain_files_prompts_are_offered_when_no_setting_names_any(make_bot, fake_slack, tmp_path):
    """A deployment's own questions (its domain file) reach the messages tab; no code default."""
    domain = tmp_path / "domain.yaml"
    domain.write_text("suggested_prompts:\n  - How many vacation days do I get?\n"
                      "  - ¿Cómo pido un reembolso?\n", encoding="utf-8")
    slack = await make_bot(domain_file=domain)
    opened = {"type": "app_home_opened", "user": "U0001", "channel": "D0001", "tab": "messages",
              "event_ts": "1700000820.000100"}
    assert await slack.send_event(opened) == 200
    await slack.bot.drain()
    [call] = fake_slack.calls_to("assistant.threads.setSuggestedPrompts")
    prompts = [p["message"] for p in call.args["prompts"]]
    assert prompts[:2] == ["How many vacation days do I get?", "¿Cómo pido un reembolso?"]
    assert prompts[2:] == ["infant care near 78702"]  # then the registry command's example


async def test_legacy_assistant_thread_still_gets_prompts(make_bot, fake_slack):
    slack = await make_bot(slack_suggested_prompts=["Who is eligible?"])
    event = {"type": "assistant_thread_started", "event_ts": "1700000850.000200",
             "assistant_thread": {"user_id": "U0001", "channel_id": "D0001", "thread_ts": "1700000850.000100",
                                  "context": {"channel_id": "C0001", "team_id": "T0001"}}}
    assert await slack.send_event(event) == 200
    await slack.bot.drain()
    [prompts] = fake_slack.calls_to("assistant.threads.setSuggestedPrompts")
    assert prompts.args["thread_ts"] == "1700000850.000100"


async def test_assistant_message_shows_status_sets_title_and_answers(make_bot, fake_slack, llm):
    llm.script(AGENT, search_step(), final("Assistant answer.", KB_DOC))
    slack = await make_bot()
    thread = fake_slack.add_thread("D0001", [{"ts": "1700000900.000100", "user": BOT_USER_ID, "bot_id": BOT_ID,
                                             "text": "Hi! Ask away."}])
    await slack.dm("who is eligible by income?", ts="1700000900.000200", thread_ts=thread)
    await slack.bot.drain()
    statuses = [c.args.get("loading_messages") for c in fake_slack.calls_to("assistant.threads.setStatus")]
    assert statuses[0] == ["Thinking…"]
    assert any(m and "knowledge base" in m[0].lower() for m in statuses)  # tool progress as status
    [title] = fake_slack.calls_to("assistant.threads.setTitle")
    assert title.args["title"] == "who is eligible by income?"
    assert "Assistant answer." in bot_messages(fake_slack, "D0001", thread)[-1]["text"]


async def test_workspace_without_assistant_feature_still_answers(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Plain DM answer.", KB_DOC))
    fake_slack.script("assistant.threads.setStatus", body={"ok": False, "error": "not_allowed_token_type"}, times=5)
    fake_slack.script("assistant.threads.setTitle", body={"ok": False, "error": "not_allowed_token_type"}, times=5)
    slack = await make_bot()
    thread = fake_slack.add_thread("D0001", [{"ts": "1700001000.000100", "user": "U0001", "text": "first"}])
    await slack.dm("who is eligible?", ts="1700001000.000200", thread_ts=thread)
    await slack.bot.drain()
    assert len(fake_slack.calls_to("assistant.threads.setStatus")) == 1  # tried once, then remembered
    assert "Plain DM answer." in bot_messages(fake_slack, "D0001", thread)[-1]["text"]


# --- limits, failures, Slack's own rate limit -----------------------------------------------------------


async def test_rate_limit_answers_with_retry_time(make_bot, fake_slack, llm):
    llm.script(AGENT, final("First answer.", KB_DOC))
    slack = await make_bot(rate_limit_per_minute=1)
    await slack.mention("who is eligible?", ts="1700001100.000100")
    await slack.bot.drain()
    await slack.mention("and again?", ts="1700001100.000200")
    await slack.bot.drain()
    [note] = fake_slack.calls_to("chat.postEphemeral")
    assert note.args["user"] == "U0001" and "send it again in" in note.args["text"]
    assert len(llm.requests_for(AGENT)) == 1


async def test_oversized_message_gets_a_clear_note(make_bot, fake_slack):
    slack = await make_bot(max_message_chars=100)
    await slack.mention("x" * 500, ts="1700001150.000100")
    await slack.bot.drain()
    [note] = fake_slack.calls_to("chat.postEphemeral")
    assert "at most 100" in note.args["text"]


async def test_provider_down_gives_search_results_with_a_note(make_bot, fake_slack, llm, caplog):
    llm.script_error(AGENT, status=500, message="upstream exploded")
    slack = await make_bot()
    await slack.mention("who is eligible by income?", ts="1700001200.000100")
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "C0001", "1700001200.000100")
    assert "The language model is not answering right now" in reply["text"] and "Sorry" not in reply["text"]
    assert "who is eligible by income?" not in caplog.text  # logs never carry the message text
    assert "xoxb-test" not in caplog.text


async def test_slack_429_retry_after_is_honoured(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Delivered after the rate limit.", KB_DOC))
    fake_slack.rate_limit("chat.startStream", retry_after=1)
    slack = await make_bot()
    await slack.mention("who is eligible?", ts="1700001300.000100")
    await slack.bot.drain(timeout=15)
    first, second = fake_slack.calls_to("chat.startStream")
    assert second.at - first.at >= 1.0  # waited for Retry-After
    [reply] = bot_messages(fake_slack, "C0001", "1700001300.000100")
    assert "Delivered after the rate limit." in reply["text"]


async def test_without_llm_key_search_only_with_notice_once_per_thread(make_bot, fake_slack):
    slack = await make_bot(agent_model=None, router_model=None)
    ts = "1700001400.000100"
    await slack.mention("what is the income limit for a family of 4?", ts=ts)
    await slack.bot.drain()
    await slack.mention("and the parent share of cost?", ts="1700001400.000200", thread_ts=ts)
    await slack.bot.drain()
    first, second = bot_messages(fake_slack, "C0001", ts)
    assert "Income Eligibility" in json.dumps(first["blocks"])  # search-only answer with sources
    assert "OPENAI_API_KEY" in json.dumps(first["blocks"])  # says what enables full answers
    assert "OPENAI_API_KEY" not in json.dumps(second["blocks"])  # ...once per thread


# --- /facility and buttons -------------------------------------------------------------------------------


async def test_facility_command_acks_then_responds_with_compact_list(make_bot, fake_slack):
    slack = await make_bot()
    assert await slack.command("infant care near 78702", hook="cmd1") == 200
    assert "Searching" in slack.last_body
    [response] = await fake_slack.wait_for("response_url:cmd1")
    payload = response.args
    assert payload["response_type"] == "ephemeral" and payload["replace_original"] is True
    text = json.dumps(payload["blocks"])
    assert "Austin" in text and "512-" in text and " mi" in text  # name/address, phone, distance
    assert "records_share" in text
    assert fake_slack.calls_to("chat.postMessage") == []  # no LLM, no channel message


async def test_facility_command_without_text_shows_usage(make_bot, fake_slack):
    slack = await make_bot()
    assert await slack.command("", hook="cmd2") == 200
    assert "Search the licensed facility registry" in slack.last_body and "/facility infant care" in slack.last_body
    await slack.bot.drain()
    assert fake_slack.calls_to("response_url:cmd2") == []


async def test_share_in_channel_posts_visible_copy(make_bot, fake_slack):
    slack = await make_bot()
    value = json.dumps({"c": "facility", "q": "infant care near 78702"})
    assert await slack.click("records_share", value, hook="share") == 200
    await slack.bot.drain()
    shared, deleted = [c.args for c in fake_slack.calls_to("response_url:share")]
    assert shared["response_type"] == "in_channel" and "<@U0001>" in json.dumps(shared["blocks"])
    assert deleted["delete_original"] is True


async def test_feedback_is_stored_and_thanked(make_bot, fake_slack, llm, tmp_path):
    llm.script(AGENT, final("Rate me.", KB_DOC))
    slack = await make_bot(store_text=False)
    ts = "1700001500.000100"
    await slack.mention("who is eligible by income?", ts=ts)
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "C0001", ts)
    buttons = next(b for b in reply["blocks"] if b["type"] == "actions")["elements"]
    down = next(b for b in buttons if b["action_id"] == "feedback_down")
    assert await slack.click("feedback_down", down["value"], message_ts=reply["ts"], thread_ts=ts) == 200
    await slack.bot.drain()
    [row] = await slack.bot.services.askdesk.state.recent_feedback()
    assert (row.rating, row.user_id, row.channel, row.thread, row.route) == ("down", "U0001", "C0001", ts, "knowledge")
    assert row.sources == [KB_DOC] and row.question is None
    from datetime import datetime, timedelta, timezone

    [turn] = await slack.bot.services.askdesk.state.turns(datetime.now(timezone.utc) - timedelta(minutes=5))
    assert (turn.surface, turn.outcome, turn.route, turn.sources, turn.question) == (
        "slack", "answered", "knowledge", [KB_DOC], None)  # counted for the report, without its text
    [thanks] = fake_slack.calls_to("chat.postEphemeral")
    assert "Thanks" in thanks.args["text"] and thanks.args["user"] == "U0001"


async def test_feedback_keeps_question_text_only_when_enabled(make_bot, fake_slack, llm):
    llm.script(AGENT, final("Rate me too.", KB_DOC))
    slack = await make_bot(store_text=True)
    ts = "1700001600.000100"
    await slack.mention("who is eligible by income?", ts=ts)
    await slack.bot.drain()
    [reply] = bot_messages(fake_slack, "C0001", ts)
    up = next(b for b in reply["blocks"] if b["type"] == "actions")["elements"][0]
    await slack.click("feedback_up", up["value"], message_ts=reply["ts"], thread_ts=ts)
    await slack.bot.drain()
    [row] = await slack.bot.services.askdesk.state.recent_feedback()
    assert row.rating == "up" and row.question == "who is eligible by income?"


async def test_long_answer_is_split_within_slack_limits_without_breaking_code(make_bot, fake_slack, llm):
    code = "```python\n" + "\n".join(f"rate_{i} = {i * 1.5}" for i in range(200)) + "\n```"
    long_answer = "\n\n".join([f"Paragraph {i}: " + "income rules " * 60 for i in range(20)] + [code, "The end."])
    llm.script(AGENT, final(long_answer, KB_DOC))
    slack = await make_bot()
    ts = "1700001700.000100"
    await slack.mention("explain all the income rules", ts=ts)
    await slack.bot.drain()
    replies = bot_messages(fake_slack, "C0001", ts)
    assert len(replies) >= 3
    # the streamed first part is the message text; the posted parts are markdown blocks
    contents = ["".join(b["text"] for b in r["blocks"] if b["type"] == "markdown") or r["text"] for r in replies]
    assert all(len(c) <= 12000 and c.count("```") % 2 == 0 for c in contents)  # within limits, no cut fence
    assert any(code in c for c in contents)  # the code block stays whole
    assert "".join("".join(c.split()) for c in contents) == "".join(long_answer.split())  # nothing lost
    footers = [r for r in replies if "askdesk_sources" in json.dumps(r["blocks"])]
    assert footers == [replies[-1]]  # sources and feedback once, on the last message


UNPLACED = "infant care near 78702, somewhere my sister swears by"


async def test_facility_command_reads_unplaced_words_with_the_router_model(make_bot, fake_slack, llm_server):
    llm_server.script("groq", {"accredited": True})
    slack = await make_bot()
    assert await slack.command(UNPLACED, hook="cmd3") == 200
    [response] = await fake_slack.wait_for("response_url:cmd3")
    assert len(llm_server.requests) == 1 and "my sister swears by" in llm_server.requests[0].text
    assert "accredited" in json.dumps(response.args["blocks"]).lower()  # the extracted criterion is used


async def test_facility_command_without_a_key_makes_no_model_call(make_bot, fake_slack):
    slack = await make_bot(router_model=None, agent_model=None)  # no provider key in this test's env
    assert await slack.command(UNPLACED, hook="cmd4") == 200
    [plain] = await fake_slack.wait_for("response_url:cmd4")
    text = json.dumps(plain.args["blocks"])  # the network guard fails any model call
    assert "512-" in text and "accredited" not in text.lower()


async def test_facility_command_keeps_the_parse_when_the_router_model_fails(make_bot, fake_slack, llm_server):
    llm_server.script_error("groq", 503, times=1)
    llm_server.script_error("openai", 503, times=1)  # the chain's fallback fails too
    slack = await make_bot()
    assert await slack.command(UNPLACED, hook="cmd5") == 200
    [kept] = await fake_slack.wait_for("response_url:cmd5")
    assert {r.provider for r in llm_server.requests} <= {"groq", "openai"}
    text = json.dumps(kept.args["blocks"])
    assert "512-" in text and "accredited" not in text.lower() and "reference" not in text
