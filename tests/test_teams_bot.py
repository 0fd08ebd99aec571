"""The Teams bot end to end, offline: the real Teams SDK app (dev mode: no JWT, no tokens)
receives Bot Framework activity JSON on /api/messages and answers through a recording fake
Bot Connector (the activities' serviceUrl), with the real `Askdesk` over a small KB subset
and the scripted fake LLM server."""

from __future__ import annotations

import asyncio
import csv
import json
import logging
import shutil

import pytest

from agent.config import Settings
from agent.runtime import Runtime
from agent.turn.service import Askdesk
from tests.conftest import SAMPLE_FACILITIES, SAMPLE_KB, seed_embeddings
from tests.fakes.teams_connector import (
    BOT_ID,
    FakeTeamsConnector,
    TeamsHarness,
    channel_conversation,
    extension_query,
    feedback_invoke,
    group_conversation,
    installation_update,
    message_activity,
    personal_conversation,
)

from tests.knowledge_fixtures import SMALL_KB_DOC as KB_DOC
AGENT = "openai"
ROUTER = "groq"


def final(answer: str, *sources: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "confidence": 0.9,
                     "references": [{"source": s} for s in sources]}}


@pytest.fixture
async def connector():
    fake = await FakeTeamsConnector().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def make_bot(kb_runtime, connector, tmp_path):
    made: list[tuple[TeamsHarness, Askdesk]] = []

    async def make(**overrides) -> TeamsHarness:
        base = dict(data_dir=tmp_path / "data", agent_model="openai/gpt-4.1-mini",
                    router_model="groq/llama-3.1-8b-instant", llm_max_retries=0)
        settings = Settings(**(base | overrides))
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        harness = await TeamsHarness.start(connector, settings, askdesk, kb_runtime)
        made.append((harness, askdesk))
        return harness

    yield make
    for harness, askdesk in made:
        await harness.close()
        await askdesk.close()


@pytest.fixture
def llm(llm_server):
    llm_server.script_default(ROUTER, {"route": "knowledge", "search_query": None})
    return llm_server


def entities(message: dict, kind: str) -> list[dict]:
    return [e for e in message.get("entities") or [] if e.get("type") == kind or e.get("@type") == kind]


def root_entity(message: dict) -> dict:
    [entity] = [e for e in message.get("entities") or [] if e.get("type") == "https://schema.org/Message"]
    return entity


# --- personal chats ------------------------------------------------------------------------------


async def test_personal_message_streams_one_answer_with_citations_ai_label_and_feedback(
        make_bot, connector, llm, monkeypatch):
    from bot.teams import reply

    monkeypatch.setattr(reply, "UPDATE_EVERY", 0.0)  # the fake model answers at once: show every update
    llm.script(AGENT, final("Families of 4 qualify up to the income limit [1]. See also [7].", KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation()
    await teams.say("who is eligible by income?", conversation=conversation)
    await teams.bot.drain()

    [answer] = connector.sent_messages(conversation["id"])
    assert answer["text"].startswith("Families of 4 qualify")
    entity = root_entity(answer)
    assert "AIGeneratedContent" in entity["additionalType"]  # the AI label
    [claim] = entity["citation"]  # [1] only: [7] points at no reference
    assert claim["position"] == 1 and "Income Eligibility" in claim["appearance"]["name"]
    assert answer["channelData"]["feedbackLoop"] == {"type": "default"}
    # streamed: informative updates ("Thinking…", the tool's line), then the final message
    calls = connector.calls_in(conversation["id"])
    informative = [c.text for c in calls if c.stream_type == "informative"]
    assert informative[0] == "Thinking…" and any("knowledge base" in t.lower() for t in informative)
    assert calls[-1].stream_type == "final" and calls[-1].type == "message"
    # the question reached the model as typed
    assert "who is eligible by income?" in llm.requests_for(AGENT)[0].text


async def test_follow_up_in_personal_chat_uses_stored_history(make_bot, connector, llm):
    llm.script(AGENT, final("It is $7,000 a month for a family of 4 [1].", KB_DOC),
               final("For a family of 6 the limit is higher [1].", KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation("29:user-bea")
    await teams.say("what is the income limit for a family of 4?", conversation=conversation, user="29:user-bea")
    await teams.bot.drain()
    await teams.say("and for a family of 6?", conversation=conversation, user="29:user-bea")
    await teams.bot.drain()
    second = llm.requests_for(AGENT)[1]
    roles = [(m["role"], m["content"]) for m in second.body["messages"]]
    assert ("user", "what is the income limit for a family of 4?") in roles
    assert any(r == "assistant" and "$7,000" in c for r, c in roles)
    assert len(connector.sent_messages(conversation["id"])) == 2


async def test_streaming_refused_falls_back_to_one_posted_message(make_bot, connector, llm, monkeypatch, caplog):
    import gc

    from bot.teams import reply

    monkeypatch.setattr(reply, "FIRST_CHUNK_WAIT", 0.5)
    llm.script(AGENT, final("Posted, not streamed [1].", KB_DOC), final("Second answer [1].", KB_DOC))
    connector.script(lambda c: c.type == "typing", 403, "Streaming is not allowed for this bot", times=50)
    teams = await make_bot()
    conversation = personal_conversation("29:user-cy")
    await teams.say("who is eligible?", conversation=conversation, user="29:user-cy")
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    assert answer["text"] == "Posted, not streamed [1]." and root_entity(answer)["citation"]
    # remembered: the next answer does not try to stream again
    streamed_before = len([c for c in connector.calls if c.stream_type])
    await teams.say("and for 5 people?", conversation=conversation, user="29:user-cy")
    await teams.bot.drain()
    assert len([c for c in connector.calls if c.stream_type]) == streamed_before  # a plain typing indicator
    assert len(connector.sent_messages(conversation["id"])) == 2
    gc.collect()  # an unretrieved task exception is reported when the task is collected
    await asyncio.sleep(0)
    # the SDK's refused flush tasks are expected: no "Task exception was never retrieved" traceback
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]


# --- channels and group chats --------------------------------------------------------------------


async def test_channel_message_without_mention_is_ignored(make_bot, connector):
    teams = await make_bot()
    await teams.say("who is eligible?", conversation=channel_conversation("1800000000001"))
    await teams.bot.drain()
    assert connector.calls == []


async def test_channel_mention_answered_in_its_reply_chain_and_asker_follow_up_needs_no_mention(
        make_bot, connector, llm):
    llm.script(AGENT, final("Families of 4 qualify [1].", KB_DOC), final("Family of 6: higher [1].", KB_DOC))
    teams = await make_bot()
    thread = channel_conversation("1800000000100")
    await teams.say("who is eligible by income?", conversation=thread, mention=True, user="29:user-ada")
    await teams.bot.drain()
    [answer] = connector.sent_messages(thread["id"])  # posted into the reply chain (its conversation id)
    assert answer["text"].startswith("Families of 4 qualify") and root_entity(answer)["citation"]
    calls = connector.calls_in(thread["id"])
    assert calls[0].type == "typing" and calls[0].stream_type is None  # a typing indicator, no stream
    assert not any(c.stream_type for c in calls)
    request = llm.requests_for(AGENT)[0]
    assert "who is eligible by income?" in request.text and "<at>" not in request.text  # mention stripped

    # someone else's remark in the thread: ignored
    await teams.say("thanks!", conversation=thread, user="29:user-zed")
    await teams.bot.drain()
    assert len(connector.sent_messages(thread["id"])) == 1
    # the asker's follow-up without a mention: answered with the thread's history
    await teams.say("and for a family of 6?", conversation=thread, user="29:user-ada")
    await teams.bot.drain()
    assert [m["text"] for m in connector.sent_messages(thread["id"])][-1].startswith("Family of 6")
    roles = [(m["role"], m["content"]) for m in llm.requests_for(AGENT)[1].body["messages"]]
    assert ("user", "who is eligible by income?") in roles


async def test_group_chat_needs_a_mention_and_gets_typing_then_one_message(make_bot, connector, llm):
    llm.script(AGENT, final("Answered in the group [1].", KB_DOC))
    teams = await make_bot()
    group = group_conversation()
    await teams.say("who is eligible?", conversation=group)
    await teams.bot.drain()
    assert connector.calls == []
    await teams.say("who is eligible?", conversation=group, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(group["id"])
    assert answer["text"].startswith("Answered in the group")
    assert [c.type for c in connector.calls_in(group["id"])] == ["typing", "message"]
    await teams.say("and for 5?", conversation=group)  # no reply chains here: a mention is needed again
    await teams.bot.drain()
    assert len(connector.sent_messages(group["id"])) == 1


# --- guards -------------------------------------------------------------------------------------


async def test_duplicate_activity_is_answered_once(make_bot, connector, llm):
    llm.script(AGENT, final("Only once [1].", KB_DOC))
    teams = await make_bot()
    activity = message_activity(connector.service_url, "who is eligible?", conversation=personal_conversation("29:d"),
                                user="29:d")
    import asyncio

    statuses = await asyncio.gather(teams.post(activity), teams.post(activity), teams.post(activity))
    assert [s for s, _ in statuses] == [200, 200, 200]
    await teams.bot.drain()
    assert len(connector.sent_messages()) == 1


async def test_messages_from_bots_are_ignored(make_bot, connector):
    teams = await make_bot()
    await teams.say("who is eligible?", from_bot=True)
    await teams.bot.drain()
    assert connector.calls == []


async def test_rate_limit_and_size_cap_answer_with_a_note_and_no_model_call(make_bot, connector, llm):
    llm.script(AGENT, final("First [1].", KB_DOC))
    teams = await make_bot(rate_limit_per_minute=1, max_message_chars=100)
    conversation = personal_conversation("29:user-rl")
    await teams.say("x" * 500, conversation=conversation, user="29:user-rl")
    await teams.bot.drain()
    assert "at most 100" in connector.sent_messages(conversation["id"])[-1]["text"]
    await teams.say("who is eligible?", conversation=conversation, user="29:user-rl")
    await teams.bot.drain()
    await teams.say("who else?", conversation=conversation, user="29:user-rl")
    await teams.bot.drain()
    assert "send it again in" in connector.sent_messages(conversation["id"])[-1]["text"]
    assert len(llm.requests_for(AGENT)) == 1


async def test_provider_failure_gives_the_search_results_with_a_note_and_logs_no_text(
        make_bot, connector, llm, caplog):
    caplog.set_level("DEBUG", logger="askdesk")
    llm.script_error(AGENT, status=500, message="upstream exploded")
    teams = await make_bot()
    conversation = personal_conversation("29:user-pf")
    await teams.say("who is eligible by income?", conversation=conversation, user="29:user-pf")
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    assert "not answering" in answer["text"] and "Income Eligibility" in answer["text"]  # the core's fallback
    assert "AIGeneratedContent" not in json.dumps(answer.get("entities"))  # passages, not model text
    assert "who is eligible by income?" not in caplog.text


async def test_without_llm_key_search_only_answer_with_notice_once(make_bot, connector):
    teams = await make_bot(agent_model=None, router_model=None)
    conversation = personal_conversation("29:user-nk")
    await teams.say("what is the income limit for a family of 4?", conversation=conversation, user="29:user-nk")
    await teams.bot.drain()
    await teams.say("and the parent share of cost?", conversation=conversation, user="29:user-nk")
    await teams.bot.drain()
    first, second = connector.sent_messages(conversation["id"])
    assert "Income Eligibility" in first["text"]  # passages with their sources
    assert "OPENAI_API_KEY" in first["text"] and "OPENAI_API_KEY" not in second["text"]
    assert "AIGeneratedContent" not in json.dumps(first.get("entities"))


# --- facility search (no LLM) -------------------------------------------------------------------


async def test_facility_message_returns_an_adaptive_card_list(make_bot, connector, llm_server):
    teams = await make_bot()
    conversation = personal_conversation("29:user-fc")
    await teams.say("facility infant care near 78702", conversation=conversation, user="29:user-fc")
    await teams.bot.drain()
    [message] = connector.sent_messages(conversation["id"])
    [attachment] = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = json.dumps(attachment["content"])
    assert "Facilities:" in card and "Austin" in card and " mi" in card  # names, addresses, distance
    assert llm_server.requests_for(AGENT) == [] and llm_server.requests_for(ROUTER) == []  # no LLM call


async def test_message_extension_query_returns_facility_cards(make_bot, connector, llm_server):
    teams = await make_bot()
    status, body = await teams.post(extension_query(connector.service_url, "infant care near 78702"))
    assert status == 200
    result = body["composeExtension"]
    assert result["type"] == "result" and result["attachmentLayout"] == "list"
    first = result["attachments"][0]
    assert first["contentType"] == "application/vnd.microsoft.card.adaptive"
    assert first["preview"]["contentType"] == "application/vnd.microsoft.card.thumbnail"
    assert "Austin" in json.dumps(first["content"])
    status, body = await teams.post(extension_query(connector.service_url, "", initial_run=True))
    assert body["composeExtension"]["type"] == "message" and "78702" in body["composeExtension"]["text"]
    assert connector.calls == []  # invokes answer in their HTTP response
    assert llm_server.requests_for(AGENT) == [] and llm_server.requests_for(ROUTER) == []  # no LLM call


# --- feedback and welcome ---------------------------------------------------------------------


async def test_feedback_invoke_is_stored_with_surface_teams(make_bot, connector, llm):
    llm.script(AGENT, final("Rate me [1].", KB_DOC))
    teams = await make_bot()
    thread = channel_conversation("1800000000200")
    await teams.say("who is eligible by income?", conversation=thread, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(thread["id"])
    status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=answer["id"],
                                                 conversation=thread, comment="too vague"))
    assert status == 200
    [row] = await teams.bot.askdesk.state.recent_feedback()
    assert (row.surface, row.rating, row.user_id, row.route) == ("teams", "down", "29:user-ada", "knowledge")
    assert row.thread == thread["id"] and row.channel == thread["id"].split(";")[0]
    assert row.sources == [KB_DOC] and row.question is None
    assert row.comment == "too vague"  # the feedback form's text (it was dropped before issue 22)
    # an empty form stores no comment
    await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=answer["id"],
                                     conversation=thread, comment="  "))
    assert (await teams.bot.askdesk.state.recent_feedback())[0].comment is None


async def test_install_sends_a_welcome_with_suggested_prompts(make_bot, connector):
    teams = await make_bot()
    conversation = personal_conversation("29:user-new")
    status, _ = await teams.post(installation_update(connector.service_url, conversation=conversation,
                                                     user="29:user-new"))
    assert status == 200
    await teams.bot.drain()
    [welcome] = connector.sent_messages(conversation["id"])
    assert "askdesk" in welcome["text"]
    actions = welcome["suggestedActions"]["actions"]
    assert actions and all(a["type"] == "imBack" for a in actions)
    assert actions[-1]["value"] == "facility infant care near 78702"  # the registry's example, as a command
    assert "type **facility**" in welcome["text"]  # the welcome names the declared command
    assert welcome["suggestedActions"]["to"] == ["29:user-new"]


# --- authentication -----------------------------------------------------------------------------


async def test_with_credentials_unauthenticated_requests_are_rejected(kb_runtime, connector, tmp_path):
    """Outside dev mode the SDK validates the JWT: no bearer token, no processing (and no network)."""
    from bot.teams.credentials import TeamsAuth

    settings = Settings(data_dir=tmp_path / "data")
    askdesk = Askdesk.create(settings, runtime=kb_runtime)
    auth = TeamsAuth("00000000-0000-0000-0000-000000000001", "secret", "tenant", dev_mode=False)
    teams = await TeamsHarness.start(connector, settings, askdesk, kb_runtime, auth=auth)
    try:
        status, _ = await teams.post(message_activity(connector.service_url, "hello"))
        assert status == 401
        status, _ = await teams.post(message_activity(connector.service_url, "hello"),
                                     headers={"Authorization": "Bearer not-a-jwt"})
        assert status == 401  # a malformed token fails before any key is fetched
        status, _ = await teams.post(extension_query(connector.service_url, "infant care near 78702"))
        assert status == 401  # invokes too: authenticated before they are parsed
        await teams.bot.drain()
        assert connector.calls == []
        assert BOT_ID  # the activity named our bot; still refused
    finally:
        await teams.close()
        await askdesk.close()
