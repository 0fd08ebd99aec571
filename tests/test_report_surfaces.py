"""The knowledge-gap report on the surfaces (issue 22): Slack's App Home tab publishes it for a
user in ASKDESK_ADMINS and for nobody else (real Bolt and slack_sdk against the recording fake
Slack API); `report` typed by an admin in Teams returns an Adaptive Card (real Teams SDK against
the fake Bot Connector), and from anyone else is an ordinary question."""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from agent.config import Settings
from agent.state.base import TurnRecord
from agent.state.feedback import Feedback
from agent.turn.service import Askdesk
from tests.fakes.slack_api import FakeSlackAPI, SlackHarness
from tests.fakes.teams_connector import FakeTeamsConnector, TeamsHarness, personal_conversation

ADMINS = "U0ADMIN, 29:admin"
GAP = "how do I reset my VPN password"


async def seed(askdesk: Askdesk) -> None:
    now = datetime.now(timezone.utc)
    for outcome, sources, question in [("answered", ["leave.md"], None), ("answered", ["leave.md"], None),
                                       ("unanswerable", [], GAP), ("unanswerable", [], "vpn password reset")]:
        await askdesk.state.record_turn(TurnRecord(created_at=now, surface="slack", outcome=outcome,
                                                   sources=sources, question=question))
    await askdesk.state.add_feedback(Feedback(rating="down", user_id="U9", question="VPN password reset help"))


@pytest.fixture
async def services(kb_runtime, tmp_path):
    made: list[Askdesk] = []

    def make() -> tuple[Settings, Askdesk]:
        settings = Settings(data_dir=tmp_path / "data", admins=ADMINS, store_text=True)
        made.append(Askdesk.create(settings, runtime=kb_runtime))
        return settings, made[-1]

    yield make
    for askdesk in made:
        await askdesk.close()


@pytest.fixture
async def slack(services):
    fake = await FakeSlackAPI().start()
    settings, askdesk = services()
    await seed(askdesk)
    harness = await SlackHarness.start(fake, settings, askdesk)
    yield harness
    await harness.close()
    await fake.stop()


async def test_app_home_publishes_the_report_for_an_admin_and_nothing_for_others(slack):
    home = {"type": "app_home_opened", "channel": "D0001", "tab": "home"}
    assert await slack.send_event(dict(home, user="U0001", event_ts="1700000900.000100")) == 200
    assert await slack.send_event(dict(home, user="U0ADMIN", event_ts="1700000901.000100")) == 200
    await slack.bot.drain()
    [call] = slack.fake.calls_to("views.publish")
    assert call.args["user_id"] == "U0ADMIN" and call.args["_token"] == "xoxb-test"
    view = call.args["view"] if isinstance(call.args["view"], dict) else json.loads(call.args["view"])
    text = json.dumps(view, ensure_ascii=False)
    assert view["type"] == "home" and "Knowledge-gap report" in text
    assert "leave.md" in text  # most-cited documents
    assert "3 questions (2 unanswered, 1 👎)" in text  # the three VPN questions, one group
    assert slack.fake.calls_to("chat.postMessage") == []  # the Home tab is not the messages tab


@pytest.fixture
async def teams(services):
    connector = await FakeTeamsConnector().start()
    settings, askdesk = services()
    await seed(askdesk)
    harness = await TeamsHarness.start(connector, settings, askdesk)
    yield harness
    await harness.close()
    await connector.stop()


async def test_report_typed_by_a_teams_admin_returns_an_adaptive_card(teams):
    conversation = personal_conversation("29:admin")
    await teams.say("report", conversation=conversation, user="29:admin")
    await teams.bot.drain()
    [message] = teams.connector.sent_messages(conversation["id"])
    [attachment] = message["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = json.dumps(attachment["content"], ensure_ascii=False)
    assert "Knowledge-gap report" in card and "leave.md" in card and "VPN" in card


async def test_report_typed_by_anyone_else_in_teams_is_no_report(teams):
    conversation = personal_conversation("29:someone")
    await teams.say("report", conversation=conversation, user="29:someone")
    await teams.bot.drain()
    sent = json.dumps(teams.connector.sent_messages(conversation["id"]))
    assert "Knowledge-gap report" not in sent
