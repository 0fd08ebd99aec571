"""Issue 20's surface gaps, end to end with the real bots and recording fakes: Slack group DMs
(`mpim`) follow-ups, the Teams compose-box search's "did you mean …?", the group-chat welcome,
and Teams feedback found by conversation + message id."""

from __future__ import annotations

import json

import pytest

from agent.config import Settings
from agent.turn.service import Askdesk
from tests.fakes.slack_api import BOT_ID, BOT_USER_ID, FakeSlackAPI, SlackHarness, message_event
from agent.state.feedback import FeedbackStore
from tests.fakes.teams_connector import (
    BOT_ID as TEAMS_BOT_ID,
    BOT_NAME,
    FakeTeamsConnector,
    TeamsHarness,
    extension_query,
    feedback_invoke,
    group_conversation,
    installation_update,
)
from tests.knowledge_fixtures import SMALL_KB_DOC as KB_DOC

AGENT = "openai"
ROUTER = "groq"


def final(answer: str, *sources: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "confidence": 0.9,
                     "references": [{"source": s} for s in sources]}}


@pytest.fixture
def llm(llm_server):
    llm_server.script_default(ROUTER, {"route": "knowledge", "search_query": None})
    return llm_server


def _settings(tmp_path, **overrides) -> Settings:
    base = dict(data_dir=tmp_path / "data", agent_model="openai/gpt-4.1-mini",
                router_model="groq/llama-3.1-8b-instant", llm_max_retries=0)
    return Settings(**(base | overrides))


@pytest.fixture
async def connector():
    fake = await FakeTeamsConnector(ids_per_conversation=True).start()
    yield fake
    await fake.stop()


@pytest.fixture
async def teams_bot(kb_runtime, connector, tmp_path):
    made: list[tuple[TeamsHarness, Askdesk]] = []

    async def make(**overrides) -> TeamsHarness:
        settings = _settings(tmp_path, **overrides)
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        harness = await TeamsHarness.start(connector, settings, askdesk, kb_runtime)
        made.append((harness, askdesk))
        return harness

    yield make
    for harness, askdesk in made:
        await harness.close()
        await askdesk.close()


@pytest.fixture
async def fake_slack():
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def slack_bot(kb_runtime, fake_slack, tmp_path):
    made: list[tuple[SlackHarness, Askdesk]] = []

    async def make(**overrides) -> SlackHarness:
        settings = _settings(tmp_path, **overrides)
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        harness = await SlackHarness.start(fake_slack, settings, askdesk, kb_runtime)
        made.append((harness, askdesk))
        return harness

    yield make
    for harness, askdesk in made:
        await harness.close()
        await askdesk.close()


def bot_messages(fake: FakeSlackAPI, channel: str, thread_ts: str) -> list[dict]:
    return [m for m in fake.threads.get((channel, thread_ts), []) if m.get("bot_id") == BOT_ID]


# --- Slack group DMs (mpim) ---------------------------------------------------------------------

MPIM = "G01MPIM0001"  # a group DM's id, as `message.mpim` events carry it


def mpim_event(text: str, *, ts: str, user: str = "U0001", thread_ts: str | None = None) -> dict:
    """A `message.mpim` delivery: {"type": "message", "channel_type": "mpim", ...}."""
    return message_event(text, channel=MPIM, ts=ts, user=user, thread_ts=thread_ts, channel_type="mpim")


async def post_in_group_dm(slack: SlackHarness, fake: FakeSlackAPI, text: str, *, ts: str, thread_ts: str,
                           user: str = "U0001") -> None:
    """A person's thread reply: Slack keeps it in the thread (conversations.replies) and delivers it."""
    fake.threads[(MPIM, thread_ts)].append({"ts": ts, "user": user, "text": text, "thread_ts": thread_ts})
    assert await slack.send_event(mpim_event(text, ts=ts, thread_ts=thread_ts, user=user)) == 200


async def test_group_dm_follow_up_in_a_thread_the_bot_answered(slack_bot, fake_slack, llm):
    llm.script(AGENT, final("It is $7,000 a month [1].", KB_DOC), final("For 6 it is higher [1].", KB_DOC))
    slack = await slack_bot()
    root = "1700090000.000100"
    fake_slack.add_thread(MPIM, [{"ts": root, "user": "U0001", "text": f"<@{BOT_USER_ID}> what is the income limit?"}])
    # a mention in the group DM: app_mention and message.mpim both deliver it, one answer
    await slack.send_event(message_event(f"<@{BOT_USER_ID}> what is the income limit?", channel=MPIM, ts=root,
                                         type="app_mention"), event_id="EvMpimMention")
    await slack.send_event(mpim_event(f"<@{BOT_USER_ID}> what is the income limit?", ts=root),
                           event_id="EvMpimMessage")
    await slack.bot.drain()
    [first] = bot_messages(fake_slack, MPIM, root)
    assert first["thread_ts"] == root and "$7,000" in first["text"]

    # someone else in the group DM chats in the thread without a mention: not a question for the bot
    await post_in_group_dm(slack, fake_slack, "thanks!", ts="1700090000.000300", thread_ts=root, user="U0002")
    await slack.bot.drain()
    assert len(bot_messages(fake_slack, MPIM, root)) == 1
    # the person who asked follows up in the thread without mentioning it: answered
    await post_in_group_dm(slack, fake_slack, "and for a family of 6?", ts="1700090000.000400", thread_ts=root)
    await slack.bot.drain()
    replies = bot_messages(fake_slack, MPIM, root)
    assert len(replies) == 2 and "For 6 it is higher" in replies[-1]["text"]
    [_, request] = llm.requests_for(AGENT)
    assert "and for a family of 6?" in request.text
    assert "what is the income limit?" in request.text  # the thread is the conversation


async def test_group_dm_top_level_message_without_mention_is_not_answered(slack_bot, fake_slack, llm):
    slack = await slack_bot()
    await slack.send_event(mpim_event("lunch at noon?", ts="1700090100.000100"))
    await slack.bot.drain()
    assert bot_messages(fake_slack, MPIM, "1700090100.000100") == []
    assert llm.requests_for(AGENT) == []  # a group DM is not a one-to-one DM


# --- Teams: the compose box's search shows the search's notes ---------------------------------


async def test_extension_results_show_the_misspelt_places_correction_first(teams_bot, connector, llm_server):
    teams = await teams_bot()
    status, body = await teams.post(extension_query(connector.service_url, "infant care near Austn"))
    assert status == 200
    result = body["composeExtension"]
    assert result["type"] == "result"
    note, *records = result["attachments"]
    # the chat card's note line, as the first row: its preview names the correction...
    preview = note["preview"]["content"]
    assert "austn" in preview["title"].lower() and "Austin" in preview["title"]
    # ...and picking it inserts the whole list card (notes and records), as the chat shows it
    card = json.dumps(note["content"])
    assert "austn" in card.lower() and "Ebenezer" in card
    assert records and all("austn" not in json.dumps(r["preview"]).lower() for r in records)
    assert "Austin" in json.dumps(records[0]["content"])
    # a search without notes has no note row
    status, body = await teams.post(extension_query(connector.service_url, "infant care near 78702"))
    first = body["composeExtension"]["attachments"][0]
    assert first["preview"]["content"]["title"] == records[0]["preview"]["content"]["title"]
    assert llm_server.requests_for(AGENT) == []


async def test_extension_with_no_records_still_says_did_you_mean(teams_bot, connector):
    teams = await teams_bot()
    status, body = await teams.post(extension_query(connector.service_url, "infant care near 7870"))
    assert body["composeExtension"]["type"] == "message"
    assert "7870" in body["composeExtension"]["text"]


# --- Teams: the group-chat welcome ------------------------------------------------------------


async def test_group_chat_install_welcome_speaks_of_the_group_chat(teams_bot, connector):
    teams = await teams_bot()
    chat = group_conversation("19:group-welcome@thread.v2")
    status, _ = await teams.post(installation_update(connector.service_url, conversation=chat))
    assert status == 200
    await teams.bot.drain()
    [welcome] = connector.sent_messages(chat["id"])
    assert "group chat" in welcome["text"] and "channel" not in welcome["text"].lower()
    assert "suggestedActions" not in welcome  # suggestions are for personal chats


async def test_group_chat_conversation_update_welcome_speaks_of_the_group_chat(teams_bot, connector):
    teams = await teams_bot()
    chat = {"id": "19:group-added@thread.v2", "conversationType": "groupChat", "tenantId": "tenant-0001"}
    activity = installation_update(connector.service_url, conversation=chat)
    activity.update({"type": "conversationUpdate",
                     "membersAdded": [{"id": TEAMS_BOT_ID, "name": BOT_NAME}]})
    activity.pop("action")
    status, _ = await teams.post(activity)
    assert status == 200
    await teams.bot.drain()
    [welcome] = connector.sent_messages(chat["id"])
    assert "group chat" in welcome["text"] and "In a channel" not in welcome["text"]


# --- Teams: feedback found by conversation + message id ----------------------------------------


async def test_feedback_with_the_same_message_id_in_two_conversations(teams_bot, connector, llm):
    llm.script(AGENT, final("Cited answer [1].", KB_DOC), final("An answer without sources."))
    teams = await teams_bot(store_text=True)
    first, second = group_conversation("19:group-a@thread.v2"), group_conversation("19:group-b@thread.v2")
    await teams.say("who is eligible by income?", conversation=first, mention=True)
    await teams.bot.drain()
    await teams.say("what are the office hours?", conversation=second, mention=True, user="29:user-bo")
    await teams.bot.drain()
    [a] = connector.sent_messages(first["id"])
    [b] = connector.sent_messages(second["id"])
    assert a["id"] == b["id"]  # unique within a conversation only, as Teams promises

    status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="like", reply_to_id=a["id"],
                                                 conversation=first))
    assert status == 200
    status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=b["id"],
                                                 conversation=second))
    assert status == 200
    rows = {row.thread: row for row in await FeedbackStore(teams.bot.settings.sqlite_path).recent()}
    assert (rows[first["id"]].rating, rows[first["id"]].sources) == ("up", [KB_DOC])
    assert rows[first["id"]].question == "who is eligible by income?"
    assert (rows[second["id"]].rating, rows[second["id"]].sources) == ("down", [])
    assert rows[second["id"]].question == "what are the office hours?"
