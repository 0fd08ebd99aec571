""""Ask a person" on Teams end to end, offline: the real Teams SDK app (dev mode) and the real
Askdesk on a small knowledge base, the fake LLM, against the recording fake Bot Connector. An
unanswerable answer (or a 👎) offers "Ask a person"; pressing it starts a reply chain in the
escalation channel; a person's first reply there is relayed to the asker; "Save as answer" makes
it a learned answer the next question's search finds."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from tests.fakes.teams_connector import (
    TENANT_ID,
    card_submit,
    channel_conversation,
    feedback_invoke,
    group_conversation,
    message_activity,
    personal_conversation,
)
from tests.test_teams_bot import AGENT, KB_DOC, connector, final, llm, make_bot  # noqa: F401

ESC = "19:escalate-0001@thread.tacv2"
QUESTION = "can a grandparent pick up my child from the child care center?"
EXPERT_ANSWER = "Yes: any adult the parent lists on the enrollment form, grandparents included, with a photo ID."
UNSURE = {"step": {"kind": "final_answer", "answer": "I couldn't find this in the documents.", "confidence": 0.1,
                   "references": []}}


def actions(message: dict) -> list[dict]:
    """The Action.Submit buttons of a message's Adaptive Cards."""
    return [a for att in message.get("attachments") or [] for b in (att.get("content") or {}).get("body") or []
            if b.get("type") == "ActionSet" for a in b["actions"]]


def thread_of(chain: str) -> dict:
    return {"id": chain, "conversationType": "channel", "isGroup": True, "tenantId": TENANT_ID}


async def escalations(askdesk) -> list:
    return await askdesk.state.escalations(datetime.now(timezone.utc) - timedelta(hours=1))


async def press(teams, data: dict, conversation: dict, **kw) -> None:
    status, _ = await teams.post(card_submit(teams.connector.service_url, data, conversation=conversation, **kw))
    assert status == 200
    await teams.bot.drain()


async def ask_unanswerable(teams, connector, llm, conversation: dict) -> tuple[dict, dict]:
    """Ask in a channel and get an unsure answer: (the answer, its "Ask a person" button)."""
    llm.script(AGENT, UNSURE)
    await teams.say(QUESTION, conversation=conversation, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    [ask] = actions(answer)  # in the answer's own message
    assert "Ask a person" in ask["title"] and answer["text"].startswith("I couldn't find this")
    return answer, ask


async def test_unanswerable_ask_a_person_relay_save_and_cite(make_bot, connector, llm):
    teams = await make_bot(escalation_channel=ESC)
    askdesk = teams.bot.askdesk
    asked = channel_conversation("1700010000001")
    answer, ask = await ask_unanswerable(teams, connector, llm, asked)
    assert len(llm.requests_for(AGENT)) == 1

    # pressed: a new reply chain in the escalation channel with the question, the attempt and a link back
    await press(teams, ask["data"], asked, reply_to_id=answer["id"])
    [created] = [c for c in connector.created if c.get("isGroup")]
    assert created["channelData"]["channel"]["id"] == ESC
    [post] = connector.sent_messages(created["id"])
    card = str(post["attachments"])
    assert "Ada asked a question askdesk could not answer well" in post["text"]
    assert QUESTION in card and "couldn't find this in the documents" in card and "teams.microsoft.com/l/message" in card
    [escalation] = await escalations(askdesk)
    assert (escalation.surface, escalation.conversation, escalation.question, escalation.target_thread) == (
        "teams", asked["id"], QUESTION, created["id"])
    assert "passed your question on" in connector.sent_messages(asked["id"])[-1]["text"]
    await press(teams, ask["data"], asked, reply_to_id=answer["id"])  # a second press does not post it twice
    assert len([c for c in connector.created if c.get("isGroup")]) == 1
    assert "already been passed on" in connector.sent_messages(asked["id"])[-1]["text"]

    # a person's first reply in that reply chain goes back to the asker, attributed; the second does not
    chain = thread_of(escalation.target_thread)
    await teams.say(EXPERT_ANSWER, conversation=chain, user="29:user-expert", user_name="Ada Lovelace", mention=True)
    await teams.say("also bring the child's card", conversation=chain, user="29:user-other", mention=True)
    await teams.bot.drain()
    relayed = connector.sent_messages(asked["id"])[-1]
    assert "Ada Lovelace answered" in relayed["text"] and "grandparents included" in relayed["text"]
    assert not any("child's card" in m.get("text", "") for m in connector.sent_messages(asked["id"]))
    assert len(llm.requests_for(AGENT)) == 1  # no model call for any of it
    saved = await askdesk.state.escalation(escalation.id)
    assert (saved.status, saved.expert_id, saved.expert_name) == ("answered", "29:user-expert", "Ada Lovelace")

    # "Save as answer" in the escalation thread: a learned file, searchable at once
    offer = connector.sent_messages(escalation.target_thread)[-1]
    [save] = actions(offer)
    assert "Save as answer" in save["title"]
    await press(teams, save["data"], chain, user="29:user-expert", user_name="Ada Lovelace")
    [learned] = askdesk.learned()
    try:
        text = (askdesk.settings.learned_path / learned.name).read_text()
        assert f"\n# {QUESTION}\n" in text and EXPERT_ANSWER in text and "Answered by Ada Lovelace on" in text
        assert "Saved as a learned answer" in connector.sent_messages(escalation.target_thread)[-1]["text"]

        # the next question finds and cites it
        llm.script(AGENT, final("Yes, a listed grandparent may [1].", learned.name))
        again = channel_conversation("1700010000009")
        await teams.say("who may pick up my child from child care? can a grandparent?", conversation=again,
                        user="29:user-bea", mention=True)
        await teams.bot.drain()
        assert "Answered by Ada Lovelace" in llm.requests_for(AGENT)[-1].text
        [cited] = connector.sent_messages(again["id"])
        [claim] = [e for e in cited["entities"] if "citation" in e][0]["citation"]  # [1]: the learned answer
        assert "grandparent" in cited["text"] and "grandparent" in claim["appearance"]["name"].lower()
    finally:  # the index is shared with the other tests
        assert await askdesk.remove_learned(learned.name)


async def test_thumbs_down_offers_ask_a_person_and_passes_the_question_on(make_bot, connector, llm):
    teams = await make_bot(escalation_channel_teams=ESC)
    asked = personal_conversation("29:user-cy")
    llm.script(AGENT, final("I could not find who may pick up a child [1].", KB_DOC))
    await teams.say(QUESTION, conversation=asked, user="29:user-cy")
    await teams.bot.drain()
    [answer] = connector.sent_messages(asked["id"])
    assert not actions(answer)  # a supported answer has no button of its own
    status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=answer["id"],
                                                 conversation=asked, user="29:user-cy"))
    assert status == 200
    await teams.bot.drain()
    [ask] = actions(connector.sent_messages(asked["id"])[-1])
    assert "Ask a person" in ask["title"]
    await press(teams, ask["data"], asked, user="29:user-cy")
    [escalation] = await escalations(teams.bot.askdesk)
    assert escalation.question == QUESTION and "could not find who may pick up" in escalation.attempt
    assert escalation.sources == [KB_DOC] and escalation.target_thread


async def test_personal_chat_to_a_group_chat(make_bot, connector, llm):
    """A streamed answer carries the button in its final message; a group chat has no reply chains:
    the question is one message there, and a reply is a message quoting it."""
    chat = group_conversation("19:experts-0001@thread.v2")
    teams = await make_bot(escalation_channel=chat["id"])
    asked = personal_conversation("29:user-dee")
    llm.script(AGENT, UNSURE)
    await teams.say(QUESTION, conversation=asked, user="29:user-dee")
    await teams.bot.drain()
    [answer] = connector.sent_messages(asked["id"])
    [ask] = actions(answer)
    assert "Ask a person" in ask["title"] and connector.calls_in(asked["id"])[-1].stream_type == "final"
    await press(teams, ask["data"], asked, user="29:user-dee")
    [post] = connector.sent_messages(chat["id"])
    [escalation] = await escalations(teams.bot.askdesk)
    assert escalation.target_thread == post["id"] and QUESTION in str(post["attachments"])
    await teams.say("unrelated chatter", conversation=chat, user="29:user-expert")  # not a reply to it
    await teams.say(EXPERT_ANSWER, conversation=chat, user="29:user-expert", user_name="Ada Lovelace",
                    replyToId=post["id"])
    await teams.bot.drain()
    relayed = connector.sent_messages(asked["id"])[-1]
    assert "Ada Lovelace answered" in relayed["text"] and "grandparents included" in relayed["text"]
    assert "Save as answer" in str(connector.sent_messages(chat["id"])[-1]["attachments"])


async def test_without_an_escalation_channel_no_button_is_offered(make_bot, connector, llm):
    teams = await make_bot()
    conversation = channel_conversation("1700010000002")
    llm.script(AGENT, UNSURE)
    await teams.say(QUESTION, conversation=conversation, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    assert not actions(answer)


@pytest.mark.parametrize("status", [403, 404])
async def test_escalation_conversation_unusable_tells_the_asker_and_keeps_the_question(make_bot, connector, llm,
                                                                                      status):
    teams = await make_bot(escalation_channel=ESC)
    asked = channel_conversation(f"17000100001{status}")
    _, ask = await ask_unanswerable(teams, connector, llm, asked)
    connector.script(lambda c: c.method == "CREATE", status, "The bot is not part of the conversation roster.")
    await press(teams, ask["data"], asked)
    assert "couldn't pass your question on" in connector.sent_messages(asked["id"])[-1]["text"]
    [kept] = await escalations(teams.bot.askdesk)
    assert kept.question == QUESTION and kept.status == "open" and kept.target_thread is None


async def test_relay_to_a_deleted_conversation_is_logged_once(make_bot, connector, llm, caplog):
    teams = await make_bot(escalation_channel=ESC)
    asked = channel_conversation("1700010000003")
    _, ask = await ask_unanswerable(teams, connector, llm, asked)
    await press(teams, ask["data"], asked)
    [escalation] = await escalations(teams.bot.askdesk)
    connector.script(lambda c: c.conversation == asked["id"], 404, "Conversation not found.")
    caplog.set_level(logging.INFO, logger="askdesk")
    await teams.post(message_activity(connector.service_url, EXPERT_ANSWER, conversation=thread_of(
        escalation.target_thread), user="29:user-expert", user_name="Ada Lovelace", mention=True))
    await teams.bot.drain()
    lines = [r for r in caplog.records if "could not be relayed" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None and "HTTP 404" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
