"""Teams gaps of issue 20, end to end with the real bot and the recording fake connector: the
compose-box search's "did you mean …?", the group-chat welcome, and feedback found by
conversation + message id (the fake connector numbers messages per conversation here, so two
conversations' answers share an id)."""

from __future__ import annotations

import json

import pytest

from tests.fakes.teams_connector import (
    BOT_ID as TEAMS_BOT_ID,
    BOT_NAME,
    FakeTeamsConnector,
    extension_query,
    feedback_invoke,
    group_conversation,
    installation_update,
)
from tests.test_teams_bot import AGENT, KB_DOC, final, llm, make_bot  # noqa: F401  (fixtures)


@pytest.fixture
async def connector():
    fake = await FakeTeamsConnector(ids_per_conversation=True).start()
    yield fake
    await fake.stop()


# --- Teams: the compose box's search shows the search's notes ---------------------------------


async def test_extension_results_show_the_misspelt_places_correction_first(make_bot, connector, llm_server):
    teams = await make_bot()
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


async def test_extension_with_no_records_still_says_did_you_mean(make_bot, connector):
    teams = await make_bot()
    status, body = await teams.post(extension_query(connector.service_url, "infant care near 7870"))
    assert body["composeExtension"]["type"] == "message"
    assert "7870" in body["composeExtension"]["text"]


# --- Teams: the group-chat welcome ------------------------------------------------------------


async def test_group_chat_install_welcome_speaks_of_the_group_chat(make_bot, connector):
    teams = await make_bot()
    chat = group_conversation("19:group-welcome@thread.v2")
    status, _ = await teams.post(installation_update(connector.service_url, conversation=chat))
    assert status == 200
    await teams.bot.drain()
    [welcome] = connector.sent_messages(chat["id"])
    assert "group chat" in welcome["text"] and "channel" not in welcome["text"].lower()
    assert "suggestedActions" not in welcome  # suggestions are for personal chats


async def test_group_chat_conversation_update_welcome_speaks_of_the_group_chat(make_bot, connector):
    teams = await make_bot()
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


async def test_feedback_with_the_same_message_id_in_two_conversations(make_bot, connector, llm):
    llm.script(AGENT, final("Cited answer [1].", KB_DOC), final("An answer without sources."))
    teams = await make_bot(store_text=True)
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
    rows = {row.thread: row for row in await teams.bot.askdesk.state.recent_feedback()}
    assert (rows[first["id"]].rating, rows[first["id"]].sources) == ("up", [KB_DOC])
    assert rows[first["id"]].question == "who is eligible by income?"
    # the uncited answer to an off-document question is marked unanswerable: it shows the closest sources
    assert rows[second["id"]].rating == "down" and len(rows[second["id"]].sources) <= 3
    assert rows[second["id"]].answer_id != rows[first["id"]].answer_id
    assert rows[second["id"]].question == "what are the office hours?"
