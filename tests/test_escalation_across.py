""""Ask a person" across surfaces, offline: the real Slack bot and the real Teams bot in one
process over ONE Askdesk and ONE TurnRunner (as `askdesk serve slack teams` runs them), against
the recording fake Slack Web API and the fake Bot Connector. With only one escalation channel
configured, a question asked on the other surface is posted there, and the first person's reply
is relayed back to the asker on their own surface; "Save as answer" is offered where the reply was."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from agent.config import Settings
from agent.turn.service import Askdesk
from bot.escalation import EscalationDesks, reachable_target
from bot.turn import TurnRunner
from tests.fakes.slack_api import BOT_USER_ID, SlackHarness, message_event
from tests.fakes.teams_connector import TeamsHarness, card_submit, channel_conversation
from tests.test_escalation_teams import ESC as TEAMS_ESC, EXPERT_ANSWER, QUESTION, UNSURE, actions, thread_of
from tests import test_slack_bot, test_teams_bot
from tests.test_slack_bot import AGENT, bot_messages

fake_slack, llm, connector = test_slack_bot.fake_slack, test_slack_bot.llm, test_teams_bot.connector  # fixtures

SLACK_ESC = "CESCALATE"


def buttons(message: dict) -> list[dict]:
    return [e for b in message.get("blocks") or [] if b.get("type") == "actions" for e in b["elements"]]


@pytest.fixture
async def both(kb_runtime, fake_slack, connector, tmp_path):
    """Both surfaces over one Askdesk and one TurnRunner."""
    made: list = []

    async def make(**overrides) -> tuple[SlackHarness, TeamsHarness, Askdesk]:
        settings = Settings(**(dict(data_dir=tmp_path / "data", agent_model="openai/gpt-4.1-mini",
                                    router_model="groq/llama-3.1-8b-instant", llm_max_retries=0) | overrides))
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        runner = TurnRunner(askdesk)
        slack = await SlackHarness.start(fake_slack, settings, askdesk, kb_runtime, runner=runner)
        teams = await TeamsHarness.start(connector, settings, askdesk, kb_runtime, runner=runner)
        made.append((slack, teams, askdesk))
        return slack, teams, askdesk

    yield make
    for slack, teams, askdesk in made:
        await slack.close()
        await teams.close()
        await askdesk.close()


async def only_escalation(askdesk):
    [escalation] = await askdesk.state.escalations(datetime.now(timezone.utc) - timedelta(hours=1))
    return escalation


async def test_teams_question_to_slack_channel_and_the_slack_reply_back_to_teams(both, fake_slack, connector, llm):
    slack, teams, askdesk = await both(escalation_channel=SLACK_ESC)
    asked = channel_conversation("1700020000001")
    llm.script(AGENT, UNSURE)
    await teams.say(QUESTION, conversation=asked, mention=True)
    await teams.bot.drain()
    [answer] = connector.sent_messages(asked["id"])
    [ask] = actions(answer)  # offered: the Slack surface runs in this process
    assert "Ask a person" in ask["title"]

    # pressed on Teams: posted in the Slack escalation channel, with who asked and a link back to Teams
    await teams.post(card_submit(connector.service_url, ask["data"], conversation=asked, reply_to_id=answer["id"]))
    await teams.bot.drain()
    [post] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == SLACK_ESC]
    posted = json.dumps(post["blocks"])
    assert QUESTION in posted and "couldn't find this in the documents" in posted
    assert "Ada asked" in post["text"] and "teams.microsoft.com/l/message" in posted
    escalation = await only_escalation(askdesk)
    assert (escalation.surface, escalation.target_surface, escalation.conversation) == ("teams", "slack", asked["id"])
    assert escalation.asker_service_url == connector.service_url and escalation.target_thread
    assert "passed your question on" in connector.sent_messages(asked["id"])[-1]["text"]

    # a person's first reply in the Slack thread: relayed to the Teams asker proactively, attributed
    await slack.send_event(message_event(EXPERT_ANSWER, channel=SLACK_ESC, ts="1700020100.000100",
                                         thread_ts=escalation.target_thread, user="UEXPERT"))
    await slack.bot.drain()
    relayed = connector.sent_messages(asked["id"])[-1]
    assert "Person UEXPERT answered" in relayed["text"] and "grandparents included" in relayed["text"]
    assert len(llm.requests_for(AGENT)) == 1  # no model call for any of it

    # "Save as answer" in the Slack escalation thread, where the reply was
    offer = bot_messages(fake_slack, SLACK_ESC, escalation.target_thread)[-1]
    [save] = buttons(offer)
    await slack.click("save_answer", save["value"], channel=SLACK_ESC, message_ts=offer["ts"],
                      thread_ts=escalation.target_thread, user="UEXPERT")
    await slack.bot.drain()
    [learned] = askdesk.learned()
    try:
        text = (askdesk.settings.learned_path / learned.name).read_text()
        assert f"\n# {QUESTION}\n" in text and "Answered by Person UEXPERT" in text
    finally:  # the index is shared with the other tests
        assert await askdesk.remove_learned(learned.name)


async def test_slack_question_to_teams_channel_and_the_teams_reply_back_to_slack(both, fake_slack, connector, llm):
    slack, teams, askdesk = await both(escalation_channel_teams=TEAMS_ESC)
    await teams.say("good morning", conversation=thread_of(TEAMS_ESC))  # Teams has been heard from: its connector
    ts = "1700021000.000100"
    llm.script(AGENT, UNSURE)
    fake_slack.add_thread("C0001", [{"ts": ts, "user": "U0001", "text": f"<@{BOT_USER_ID}> {QUESTION}"}])
    await slack.mention(QUESTION, ts=ts)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    [ask] = [b for b in buttons(answer) if b["action_id"] == "escalate"]

    # pressed on Slack: a new reply chain in the Teams escalation channel, with a link back to Slack
    await slack.click("escalate", ask["value"], message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [created] = [c for c in connector.created if c.get("isGroup")]
    assert created["channelData"]["channel"]["id"] == TEAMS_ESC
    [post] = connector.sent_messages(created["id"])
    assert "Person U0001 asked" in post["text"] and QUESTION in str(post["attachments"])
    assert "https://fake.slack.com/archives/C0001/p" in str(post["attachments"])
    escalation = await only_escalation(askdesk)
    assert (escalation.surface, escalation.target_surface) == ("slack", "teams")
    assert escalation.target_thread == created["id"]
    assert "passed your question on" in bot_messages(fake_slack, "C0001", ts)[-1]["text"]

    # a person's first reply in the Teams reply chain: relayed into the Slack thread, attributed
    await teams.say(EXPERT_ANSWER, conversation=thread_of(created["id"]), user="29:user-expert",
                    user_name="Ada Lovelace", mention=True)
    await teams.bot.drain()
    relayed = bot_messages(fake_slack, "C0001", ts)[-1]
    assert "Ada Lovelace answered" in relayed["text"] and "grandparents included" in json.dumps(relayed["blocks"])
    assert "Save as answer" in str(connector.sent_messages(created["id"])[-1]["attachments"])
    assert len(llm.requests_for(AGENT)) == 1


def test_no_button_when_the_other_surface_does_not_run_here():
    """Teams alone with a Slack escalation channel: nothing to post it with, so no button (as before)."""
    settings = Settings(escalation_channel=SLACK_ESC)
    assert reachable_target(settings, "teams", EscalationDesks()) is None
    assert reachable_target(settings, "slack", EscalationDesks()) == ("slack", SLACK_ESC)
