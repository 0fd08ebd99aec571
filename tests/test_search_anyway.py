""""Search the documents anyway" under a refusal, end to end offline: the real bot (Bolt over
HTTP, the real Askdesk, the fake LLM through the real SDKs) against the recording fake Slack Web
API and the Teams fakes. A refused question the documents answer must never be a dead end: one
press searches it and answers it in the same thread."""

from __future__ import annotations

import json

from tests.fakes.slack_api import BOT_USER_ID
from tests.test_escalation_slack import buttons
from tests.test_slack_bot import AGENT, KB_DOC, ROUTER, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401

QUESTION = "who pays for the income eligibility check at the center?"


def anyway_buttons(message: dict) -> list[dict]:
    return [b for b in buttons(message) if b["action_id"] == "search_anyway"]


async def test_slack_refusal_offers_search_anyway_which_answers_in_the_thread(make_bot, fake_slack, llm):
    slack = await make_bot()
    ts = "1700004000.000100"
    llm.script(ROUTER, {"route": "offtopic", "search_query": None})  # the router model refuses it
    fake_slack.add_thread("C0001", [{"ts": ts, "user": "U0001", "text": f"<@{BOT_USER_ID}> {QUESTION}"}])
    await slack.mention(QUESTION, ts=ts)
    await slack.bot.drain()
    [refusal] = bot_messages(fake_slack, "C0001", ts)
    assert "Sorry, I can only help" in refusal["text"]
    [button] = anyway_buttons(refusal)
    assert "Search the documents anyway" in button["text"]["text"] and not llm.requests_for(AGENT)

    llm.script(AGENT, final("The center's staff check income eligibility [1].", KB_DOC))
    assert await slack.click("search_anyway", button["value"], message_ts=refusal["ts"], thread_ts=ts,
                             message=refusal) == 200
    await slack.bot.drain()
    refusal_now, answer = bot_messages(fake_slack, "C0001", ts)
    assert "income eligibility" in answer["text"] and answer["thread_ts"] == ts
    assert "Income Eligibility" in json.dumps(answer["blocks"])  # cited, with feedback buttons
    assert "Sorry, I can only help" in refusal_now["text"] and not anyway_buttons(refusal_now)  # button taken off
    assert QUESTION in llm.requests_for(AGENT)[0].text
    assert len(llm.requests_for(ROUTER)) == 1  # the router model is not asked again
    # the knowledge-gap report counts the refusal the asker overrode
    from datetime import datetime, timedelta, timezone

    from agent.report.figures import figures

    turns = await slack.bot.services.askdesk.state.turns(datetime.now(timezone.utc) - timedelta(hours=1))
    assert [(t.outcome, t.overridden) for t in turns] == [("refused", False), ("answered", True)]
    now = datetime.now(timezone.utc)
    assert figures(turns, [], [], since=now - timedelta(hours=1), until=now).as_dict()["refusals_overridden"] == 1

    # pressed twice (or delivered twice): a note, no second answer
    await slack.click("search_anyway", button["value"], message_ts=refusal["ts"], thread_ts=ts, message=refusal)
    await slack.bot.drain()
    assert len(bot_messages(fake_slack, "C0001", ts)) == 2
    assert "being searched already" in fake_slack.calls_to("chat.postEphemeral")[-1].args["text"]


async def test_slack_answers_carry_no_search_anyway_button(make_bot, fake_slack, llm):
    slack = await make_bot()
    llm.script(AGENT, final("Families of 4 qualify up to the income limit [1].", KB_DOC))
    await slack.mention("who is eligible by income?", ts="1700004100.000100")
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", "1700004100.000100")
    assert not anyway_buttons(answer) and "feedback_up" in json.dumps(answer["blocks"])


async def test_slack_search_anyway_for_a_question_no_longer_in_the_thread(make_bot, fake_slack, llm):
    """The question was deleted: a clear note, nothing answered."""
    slack = await make_bot()
    ts = "1700004200.000100"
    llm.script(ROUTER, {"route": "offtopic", "search_query": None})
    await slack.mention(QUESTION, ts=ts)
    await slack.bot.drain()
    [refusal] = bot_messages(fake_slack, "C0001", ts)
    fake_slack.threads[("C0001", ts)] = [m for m in fake_slack.threads[("C0001", ts)] if m["ts"] != ts]
    slack.bot.services.answering.threads._cache.clear()
    await slack.click("search_anyway", anyway_buttons(refusal)[0]["value"], message_ts=refusal["ts"], thread_ts=ts,
                      message=refusal)
    await slack.bot.drain()
    assert "couldn't find that question" in fake_slack.calls_to("chat.postEphemeral")[-1].args["text"]
    assert not llm.requests_for(AGENT)


# --- Teams ---------------------------------------------------------------------------------------

from tests.fakes.teams_connector import channel_conversation, personal_conversation  # noqa: E402
from tests.test_escalation_teams import actions, press  # noqa: E402
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: E402,F401


async def test_teams_refusal_offers_search_anyway_which_answers_in_the_conversation(make_teams_bot, connector, llm):
    teams = await make_teams_bot()
    asked = channel_conversation("1700020000001")
    llm.script(ROUTER, {"route": "offtopic", "search_query": None})
    await teams.say(QUESTION, conversation=asked, mention=True)
    await teams.bot.drain()
    [refusal] = connector.sent_messages(asked["id"])
    assert "Sorry, I can only help" in refusal["text"]
    [button] = actions(refusal)
    assert "Search the documents anyway" in button["title"] and button["data"]["q"] == QUESTION

    llm.script(AGENT, final("The center's staff check income eligibility [1].", KB_DOC))
    await press(teams, button["data"], asked, reply_to_id=refusal["id"])
    answer = connector.sent_messages(asked["id"])[-1]
    assert "income eligibility" in answer["text"] and not actions(answer)
    assert QUESTION in llm.requests_for(AGENT)[0].text and len(llm.requests_for(ROUTER)) == 1

    await press(teams, button["data"], asked, reply_to_id=refusal["id"])  # again: a note, not a second answer
    assert "being searched already" in connector.sent_messages(asked["id"])[-1]["text"]
    assert len(llm.requests_for(AGENT)) == 1


async def test_teams_answers_carry_no_search_anyway_button(make_teams_bot, connector, llm):
    teams = await make_teams_bot()
    chat = personal_conversation()
    llm.script(AGENT, final("Families of 4 qualify up to the income limit [1].", KB_DOC))
    await teams.say("who is eligible by income?", conversation=chat)
    await teams.bot.drain()
    sent = connector.sent_messages(chat["id"])
    assert any("Families of 4 qualify" in (m.get("text") or "") for m in sent)
    assert not any(b["data"].get("askdesk") == "search_anyway" for m in sent for b in actions(m))
