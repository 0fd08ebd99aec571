"""Each source is seen only by its audience, on Slack and on Teams (issue 33): the same question
in an all-staff channel and in the HR channel, and in a DM of an HR member and of someone else.
An HR folder is synced with `audience: [<HR channel>, hr@acme.example]` into the surfaces'
knowledge base; the bots answer search-only (no model), so an answer quotes what its searches
were allowed to find."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import pytest_asyncio

from agent.sources.folder import FolderConfig, FolderSource
from agent.sources.sync import sync_all
from tests.fakes.teams_connector import CHANNEL_ID, channel_conversation, group_conversation, personal_conversation
from tests.test_slack_bot import bot_messages, fake_slack, make_bot  # noqa: F401
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: F401

SECRET = "Zephyr"  # only the HR document says it
QUESTION = "when and where does the disciplinary panel meet?"


@pytest_asyncio.fixture(scope="module")
async def hr_source(kb_runtime, tmp_path_factory):
    folder: Path = tmp_path_factory.mktemp("hr")
    (folder / "panel.md").write_text(f"# Disciplinary panel\n\n## Meetings\n\nThe disciplinary panel meets on "
                                     f"Tuesdays in room {SECRET}, chaired by the head of HR.\n", encoding="utf-8")
    declared = folder.parent / "sources.yaml"
    declared.write_text(f"sources:\n  - name: hr\n    kind: folder\n    path: {folder}\n"
                        f"    audience: [C0HR, '{CHANNEL_ID}', hr@acme.example]\n", encoding="utf-8")
    source = FolderSource(FolderConfig(name="hr", kind="folder", path=folder,
                                       audience=["C0HR", CHANNEL_ID, "hr@acme.example"]))
    (report,) = await sync_all(kb_runtime, sources=[source])
    assert report.added == ["Disciplinary panel"]
    return declared


async def test_slack_channels_and_dms_see_only_their_sources(make_bot, fake_slack, hr_source):
    slack = await make_bot(agent_model=None, router_model=None, sources=hr_source)
    fake_slack.emails.update({"U0HR": "HR@acme.example", "U0OTHER": "someone@acme.example"})
    asked = {"hr channel": ("C0HR", "U0OTHER", "1700070000.000100"), "all staff": ("C0001", "U0HR", "1700070100.000100"),
             "hr member's dm": ("D0HR", "U0HR", "1700070200.000100"), "other dm": ("D0OT", "U0OTHER", "1700070300.000100")}
    seen = {}
    for where, (channel, user, ts) in asked.items():
        if channel.startswith("D"):
            await slack.dm(QUESTION, ts=ts, channel=channel, user=user)
        else:
            await slack.mention(QUESTION, ts=ts, channel=channel, user=user)
        await slack.bot.drain()
        seen[where] = SECRET in json.dumps(bot_messages(fake_slack, channel, ts))
    assert seen == {"hr channel": True, "all staff": False, "hr member's dm": True, "other dm": False}


async def test_slack_private_command_uses_the_askers_audience_not_the_channels(make_bot, fake_slack, hr_source):
    slack = await make_bot(agent_model=None, router_model=None, sources=hr_source)
    fake_slack.emails["U0HR2"] = "hr@acme.example"
    for user, hook, expected in (("U0HR2", "p1", True), ("U0NOPE", "p2", False)):
        assert await slack.command(QUESTION, command="/askdesk", channel="C0001", user=user, hook=hook) == 200
        [response] = await fake_slack.wait_for(f"response_url:{hook}")
        await slack.bot.drain()
        assert (SECRET in json.dumps(response.args)) is expected


async def test_teams_channels_and_personal_chats_see_only_their_sources(make_teams_bot, connector, hr_source):
    teams = await make_teams_bot(agent_model=None, router_model=None, sources=hr_source)
    connector.emails.update({"29:user-hr": "hr@acme.example", "29:user-other": "other@acme.example"})
    places = {"hr channel": (channel_conversation("1700080000000"), "29:user-other", True),
              "group chat": (group_conversation(), "29:user-hr", True),
              "hr member's chat": (personal_conversation("29:user-hr"), "29:user-hr", False),
              "other's chat": (personal_conversation("29:user-other"), "29:user-other", False)}
    seen = {}
    for where, (conversation, user, mention) in places.items():
        await teams.say(QUESTION, conversation=conversation, user=user, mention=mention)
        await teams.bot.drain()
        seen[where] = SECRET in json.dumps(connector.sent_messages(conversation["id"]))
    assert seen == {"hr channel": True, "group chat": False, "hr member's chat": True, "other's chat": False}


async def test_no_email_is_looked_up_when_no_source_names_people(make_bot, fake_slack):
    slack = await make_bot(agent_model=None, router_model=None)  # no sources.yaml: nobody's email matters
    await slack.dm(QUESTION, ts="1700070400.000100", channel="D0NONE", user="U0ANY")
    await slack.bot.drain()
    assert bot_messages(fake_slack, "D0NONE", "1700070400.000100")
    assert fake_slack.calls_to("users.info") == []
