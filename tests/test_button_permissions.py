"""Every button checks who pressed it (issue 31), end to end offline: the real Slack bot (Bolt over
HTTP) and the real Teams bot (the Teams SDK in dev mode) over the real Askdesk, against the
recording fake Slack Web API and the fake Bot Connector.

"Search the documents anyway" and "Ask a person" are the asker's; "Save as answer" is the
replying expert's; an admin (ASKDESK_ADMINS) may press any of them. Anyone else gets a note only
they see, and nothing changes: nothing searched, posted, saved or stored, the button stays, and
its owner can still press it afterwards. Who the owner is comes from what the bot recorded, so a
press whose data names someone else (Teams' card data is sent back by the client) changes nothing.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from tests.fakes.slack_api import BOT_USER_ID, message_event
from tests.fakes.teams_connector import channel_conversation, feedback_invoke
from tests.test_escalation_slack import buttons
from tests.test_escalation_teams import ESC as TEAMS_ESC, EXPERT_ANSWER, QUESTION, UNSURE, actions, press, thread_of
from tests.test_slack_bot import AGENT, KB_DOC, ROUTER, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: F401

SLACK_ESC = "CESCALATE"
ASKER, OTHER, ADMIN, EXPERT = "U0001", "U0002", "UADMIN", "UEXPERT"
T_ASKER, T_OTHER, T_ADMIN, T_EXPERT = "29:user-ada", "29:user-bea", "29:user-admin", "29:user-expert"
OFFTOPIC = "who pays for the income eligibility check at the center?"
ASKERS_ONLY = "Only the person who asked this question"
EXPERTS_ONLY = "Only the person whose reply was passed on"


async def escalations(askdesk) -> list:
    return await askdesk.state.escalations(datetime.now(timezone.utc) - timedelta(hours=1))


# --- Slack -------------------------------------------------------------------------------------------

def last_ephemeral(fake_slack) -> dict:
    return fake_slack.calls_to("chat.postEphemeral")[-1].args


async def slack_refusal(slack, fake_slack, llm, ts: str) -> dict:
    llm.script(ROUTER, {"route": "offtopic", "search_query": None})
    fake_slack.add_thread("C0001", [{"ts": ts, "user": ASKER, "text": f"<@{BOT_USER_ID}> {OFFTOPIC}"}])
    await slack.mention(OFFTOPIC, ts=ts, user=ASKER)
    await slack.bot.drain()
    [refusal] = bot_messages(fake_slack, "C0001", ts)
    assert "Sorry, I can only help" in refusal["text"]
    return refusal


def anyway_button(message: dict) -> dict:
    [button] = [b for b in buttons(message) if b["action_id"] == "search_anyway"]
    return button


@pytest.mark.parametrize("owner", [ASKER, ADMIN])
async def test_slack_search_anyway_is_the_askers_or_an_admins(make_bot, fake_slack, llm, owner):
    slack = await make_bot(admins=ADMIN)
    ts = "1700031000.000100"
    refusal = await slack_refusal(slack, fake_slack, llm, ts)
    button = anyway_button(refusal)

    # someone else: a note only they see, and nothing changes
    assert await slack.click("search_anyway", button["value"], user=OTHER, message_ts=refusal["ts"], thread_ts=ts,
                             message=refusal) == 200
    await slack.bot.drain()
    note = last_ephemeral(fake_slack)
    assert note["user"] == OTHER and ASKERS_ONLY in note["text"]
    assert not llm.requests_for(AGENT) and fake_slack.calls_to("chat.update") == []  # not searched, button kept
    assert bot_messages(fake_slack, "C0001", ts) == [refusal]

    # the asker (or an admin): searched and answered in the thread, the button taken off
    llm.script(AGENT, final("The center's staff check income eligibility [1].", KB_DOC))
    await slack.click("search_anyway", button["value"], user=owner, message_ts=refusal["ts"], thread_ts=ts,
                      message=refusal)
    await slack.bot.drain()
    refusal_now, answer = bot_messages(fake_slack, "C0001", ts)
    assert "income eligibility" in answer["text"] and not any(
        b["action_id"] == "search_anyway" for b in buttons(refusal_now))
    # the answer is the asker's, whoever pressed: its own buttons are theirs
    down = next(b for b in buttons(answer) if b["action_id"] == "feedback_down")
    record = await slack.bot.services.runner.records.get(json.loads(down["value"])["a"])
    assert record is not None and record.asker == ASKER


async def slack_unanswerable(slack, fake_slack, llm, ts: str) -> tuple[dict, dict]:
    """An unsure answer to ASKER: (the answer, its own "Ask a person" button)."""
    llm.script(AGENT, UNSURE)
    fake_slack.add_thread("C0001", [{"ts": ts, "user": ASKER, "text": f"<@{BOT_USER_ID}> {QUESTION}"}])
    await slack.mention(QUESTION, ts=ts, user=ASKER)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    [ask] = [b for b in buttons(answer) if b["action_id"] == "escalate"]
    return answer, ask


def slack_escalation_posts(fake_slack) -> list:
    return [c for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == SLACK_ESC]


@pytest.mark.parametrize("owner", [ASKER, ADMIN])
async def test_slack_ask_a_person_is_the_askers_or_an_admins(make_bot, fake_slack, llm, owner):
    slack = await make_bot(escalation_channel=SLACK_ESC, admins=ADMIN)
    ts = "1700032000.000100"
    answer, ask = await slack_unanswerable(slack, fake_slack, llm, ts)
    askdesk = slack.bot.services.askdesk

    await slack.click("escalate", ask["value"], user=OTHER, message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    note = last_ephemeral(fake_slack)
    assert note["user"] == OTHER and ASKERS_ONLY in note["text"]
    assert slack_escalation_posts(fake_slack) == [] and await escalations(askdesk) == []
    assert len(bot_messages(fake_slack, "C0001", ts)) == 1  # no "passed on" either

    await slack.click("escalate", ask["value"], user=owner, message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [post] = slack_escalation_posts(fake_slack)
    assert QUESTION in json.dumps(post.args["blocks"]) and f"<@{ASKER}>" in post.args["text"]
    [escalation] = await escalations(askdesk)
    assert escalation.asker == ASKER  # an admin passes on the asker's question, not their own


async def test_slack_thumbs_down_offers_ask_a_person_to_the_asker_only(make_bot, fake_slack, llm):
    slack = await make_bot(escalation_channel=SLACK_ESC, admins=ADMIN)
    ts = "1700033000.000100"
    llm.script(AGENT, final("I could not find who may pick up a child.", KB_DOC))
    fake_slack.add_thread("C0001", [{"ts": ts, "user": ASKER, "text": f"<@{BOT_USER_ID}> {QUESTION}"}])
    await slack.mention(QUESTION, ts=ts, user=ASKER)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    down = next(b for b in buttons(answer) if b["action_id"] == "feedback_down")
    offered = {}
    for user in (OTHER, ASKER, ADMIN):
        await slack.click("feedback_down", down["value"], user=user, message_ts=answer["ts"], thread_ts=ts)
        await slack.bot.drain()
        thanks = last_ephemeral(fake_slack)
        assert thanks["user"] == user and "Thanks for the feedback" in thanks["text"]
        offered[user] = "Ask a person" in json.dumps(thanks["blocks"])
    assert offered == {OTHER: False, ASKER: True, ADMIN: True}


async def slack_relayed(slack, fake_slack, llm, ts: str):
    """An escalated question with EXPERT's reply relayed: (the escalation, its "Save as answer" button, the offer)."""
    answer, ask = await slack_unanswerable(slack, fake_slack, llm, ts)
    await slack.click("escalate", ask["value"], user=ASKER, message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [escalation] = await escalations(slack.bot.services.askdesk)
    await slack.send_event(message_event(EXPERT_ANSWER, channel=SLACK_ESC, ts="1700034100.000100",
                                         thread_ts=escalation.target_thread, user=EXPERT))
    await slack.bot.drain()
    offer = bot_messages(fake_slack, SLACK_ESC, escalation.target_thread)[-1]
    [save] = buttons(offer)
    return escalation, save, offer


@pytest.mark.parametrize("owner", [EXPERT, ADMIN])
async def test_slack_save_as_answer_is_the_experts_or_an_admins(make_bot, fake_slack, llm, owner):
    slack = await make_bot(escalation_channel=SLACK_ESC, admins=ADMIN)
    askdesk = slack.bot.services.askdesk
    escalation, save, offer = await slack_relayed(slack, fake_slack, llm, "1700034000.000100")

    for user in (OTHER, ASKER):  # the asker is not the expert either
        await slack.click("save_answer", save["value"], user=user, channel=SLACK_ESC, message_ts=offer["ts"],
                          thread_ts=escalation.target_thread)
        await slack.bot.drain()
        note = last_ephemeral(fake_slack)
        assert note["user"] == user and note["channel"] == SLACK_ESC and EXPERTS_ONLY in note["text"]
    assert askdesk.learned() == [] and (await askdesk.state.escalation(escalation.id)).saved_as is None

    await slack.click("save_answer", save["value"], user=owner, channel=SLACK_ESC, message_ts=offer["ts"],
                      thread_ts=escalation.target_thread)
    await slack.bot.drain()
    [learned] = askdesk.learned()
    try:
        assert "Answered by Person UEXPERT" in (askdesk.settings.learned_path / learned.name).read_text()
        assert (await askdesk.state.escalation(escalation.id)).saved_as == learned.name
        assert "Saved as a learned answer" in last_ephemeral(fake_slack)["text"]
    finally:  # the index is shared with the other tests
        assert await askdesk.remove_learned(learned.name)


# --- Teams -------------------------------------------------------------------------------------------

def private_notes(connector, conversation: str, user: str) -> list[str]:
    """Messages only `user` sees in `conversation` (targeted at them)."""
    return [c.text for c in connector.calls_in(conversation)
            if c.type == "message" and c.targeted and (c.body.get("recipient") or {}).get("id") == user]


async def teams_refusal(teams, connector, llm, conversation: dict) -> tuple[dict, dict]:
    llm.script(ROUTER, {"route": "offtopic", "search_query": None})
    await teams.say(OFFTOPIC, conversation=conversation, user=T_ASKER, mention=True)
    await teams.bot.drain()
    [refusal] = connector.sent_messages(conversation["id"])
    [button] = actions(refusal)
    assert "Search the documents anyway" in button["title"]
    return refusal, button


@pytest.mark.parametrize("owner", [T_ASKER, T_ADMIN])
async def test_teams_search_anyway_is_the_askers_or_an_admins(make_teams_bot, connector, llm, owner):
    teams = await make_teams_bot(admins=T_ADMIN)
    asked = channel_conversation("1700040000001")
    refusal, button = await teams_refusal(teams, connector, llm, asked)

    await press(teams, button["data"], asked, user=T_OTHER, user_name="Bea", reply_to_id=refusal["id"])
    assert any(ASKERS_ONLY in text for text in private_notes(connector, asked["id"], T_OTHER))
    assert connector.visible_to_everyone(asked["id"]) == [refusal]  # nothing public: no answer, no note
    assert not llm.requests_for(AGENT)
    # data naming someone else does not make the press theirs: the asker is what was recorded
    await press(teams, {**button["data"], "u": T_OTHER}, asked, user=T_OTHER, reply_to_id=refusal["id"])
    await press(teams, {**button["data"], "a": "forged"}, asked, user=T_OTHER, reply_to_id=refusal["id"])
    assert len(private_notes(connector, asked["id"], T_OTHER)) == 3 and not llm.requests_for(AGENT)

    llm.script(AGENT, final("The center's staff check income eligibility [1].", KB_DOC))
    await press(teams, button["data"], asked, user=owner, user_name="Owner", reply_to_id=refusal["id"])
    answer = connector.sent_messages(asked["id"])[-1]
    assert "income eligibility" in answer["text"] and OFFTOPIC in llm.requests_for(AGENT)[0].text


async def teams_unanswerable(teams, connector, llm, conversation: dict) -> tuple[dict, dict]:
    llm.script(AGENT, UNSURE)
    await teams.say(QUESTION, conversation=conversation, user=T_ASKER, user_name="Ada", mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(conversation["id"])
    [ask] = actions(answer)
    assert "Ask a person" in ask["title"] and "u" not in ask["data"]  # the data names the answer, not the asker
    return answer, ask


@pytest.mark.parametrize("owner", [T_ASKER, T_ADMIN])
async def test_teams_ask_a_person_is_the_askers_or_an_admins(make_teams_bot, connector, llm, owner):
    teams = await make_teams_bot(escalation_channel=TEAMS_ESC, admins=T_ADMIN)
    asked = channel_conversation("1700041000001")
    answer, ask = await teams_unanswerable(teams, connector, llm, asked)

    await press(teams, ask["data"], asked, user=T_OTHER, user_name="Bea", reply_to_id=answer["id"])
    await press(teams, {**ask["data"], "u": T_OTHER}, asked, user=T_OTHER, user_name="Bea", reply_to_id=answer["id"])
    assert len([t for t in private_notes(connector, asked["id"], T_OTHER) if ASKERS_ONLY in t]) == 2
    assert [c for c in connector.created if c.get("isGroup")] == [] and await escalations(teams.bot.askdesk) == []
    assert connector.visible_to_everyone(asked["id"]) == [answer]

    await press(teams, ask["data"], asked, user=owner, user_name="Owner", reply_to_id=answer["id"])
    [created] = [c for c in connector.created if c.get("isGroup")]
    [escalation] = await escalations(teams.bot.askdesk)
    assert escalation.asker == T_ASKER and escalation.target_thread == created["id"]
    assert "passed your question on" in connector.sent_messages(asked["id"])[-1]["text"]


async def test_teams_thumbs_down_offers_ask_a_person_to_the_asker_only(make_teams_bot, connector, llm):
    teams = await make_teams_bot(escalation_channel=TEAMS_ESC, admins=T_ADMIN)
    asked = channel_conversation("1700042000001")
    llm.script(AGENT, final("I could not find who may pick up a child [1].", KB_DOC))
    await teams.say(QUESTION, conversation=asked, user=T_ASKER, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(asked["id"])
    offers = []
    for user in (T_OTHER, T_ASKER):
        await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=answer["id"],
                                         conversation=asked, user=user))
        await teams.bot.drain()
        offers.append(sum("Ask a person" in str(m.get("attachments")) for m in connector.sent_messages(asked["id"])))
    assert offers == [0, 1]  # another person's 👎 is stored, but offers them nothing they could press
    assert [f.user_id for f in await teams.bot.askdesk.state.recent_feedback()] == [T_ASKER, T_OTHER]


@pytest.mark.parametrize("owner", [T_EXPERT, T_ADMIN])
async def test_teams_save_as_answer_is_the_experts_or_an_admins(make_teams_bot, connector, llm, owner):
    teams = await make_teams_bot(escalation_channel=TEAMS_ESC, admins=T_ADMIN)
    askdesk = teams.bot.askdesk
    asked = channel_conversation("1700043000001")
    answer, ask = await teams_unanswerable(teams, connector, llm, asked)
    await press(teams, ask["data"], asked, user=T_ASKER, reply_to_id=answer["id"])
    [escalation] = await escalations(askdesk)
    chain = thread_of(escalation.target_thread)
    await teams.say(EXPERT_ANSWER, conversation=chain, user=T_EXPERT, user_name="Ada Lovelace", mention=True)
    await teams.bot.drain()
    offer = connector.sent_messages(escalation.target_thread)[-1]
    [save] = actions(offer)

    for user in (T_OTHER, T_ASKER):
        await press(teams, save["data"], chain, user=user, user_name="Someone")
        assert any(EXPERTS_ONLY in t for t in private_notes(connector, escalation.target_thread, user))
    assert askdesk.learned() == [] and (await askdesk.state.escalation(escalation.id)).saved_as is None
    assert connector.visible_to_everyone(escalation.target_thread)[-1] == offer

    await press(teams, save["data"], chain, user=owner, user_name="Owner")
    [learned] = askdesk.learned()
    try:
        assert "Answered by Ada Lovelace" in (askdesk.settings.learned_path / learned.name).read_text()
        assert (await askdesk.state.escalation(escalation.id)).saved_as == learned.name
    finally:  # the index is shared with the other tests
        assert await askdesk.remove_learned(learned.name)
