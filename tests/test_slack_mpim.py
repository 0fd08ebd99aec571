"""Slack group DMs (`mpim`): a mention is answered once in its thread, the asker's follow-ups
there need no mention, others' chatter and unmentioned top-level messages are not answered
(issue 20). The real Bolt app against the recording fake Slack Web API."""

from __future__ import annotations

from tests.fakes.slack_api import FakeSlackAPI, SlackHarness, message_event
from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    BOT_USER_ID,
    KB_DOC,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)


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


async def test_group_dm_follow_up_in_a_thread_the_bot_answered(make_bot, fake_slack, llm):
    llm.script(AGENT, final("It is $7,000 a month [1].", KB_DOC), final("For 6 it is higher [1].", KB_DOC))
    slack = await make_bot()
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


async def test_group_dm_top_level_message_without_mention_is_not_answered(make_bot, fake_slack, llm):
    slack = await make_bot()
    await slack.send_event(mpim_event("lunch at noon?", ts="1700090100.000100"))
    await slack.bot.drain()
    assert bot_messages(fake_slack, MPIM, "1700090100.000100") == []
    assert llm.requests_for(AGENT) == []  # a group DM is not a one-to-one DM
