"""Private means kept nowhere (issue 31): a question asked privately (Slack `/askdesk …`,
`@askdesk privately …` in a channel or a DM, a channel in private answer mode; Teams `privately …`
in a group chat or a personal chat, a channel in private mode, the personal-chat fallback) leaves
no question, answer or feedback comment in any file under the data dirs, even with
ASKDESK_STORE_TEXT=true. The real bots against the fake Slack Web API and the fake Bot Connector;
every byte of every file (SQLite databases and their WAL files included) is searched for each
turn's unique marker. A public turn in the same run proves the search finds what is kept."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

from bot.slack.comments import comment_view
from tests.fakes.teams_connector import (
    CHANNEL_ID,
    TENANT_ID,
    card_submit,
    channel_conversation,
    feedback_invoke,
    group_conversation,
    personal_conversation,
)
from tests.test_escalation_slack import buttons
from tests.test_slack_bot import AGENT, KB_DOC, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: F401

ESC = "CESCALATE"


def stored_bytes(*roots: Path) -> dict[str, Path]:
    """Every file under `roots` (a database, its -wal and -shm, caches, the vector store)."""
    return {str(p): p for root in roots for p in sorted(root.rglob("*")) if p.is_file()}


def _contains(path: Path, needle: bytes, block: int = 1 << 20) -> bool:
    """Every byte of the file searched, a block at a time (the vector store's files are large:
    read whole, they doubled the test's memory)."""
    tail = b""
    with path.open("rb") as f:
        while chunk := f.read(block):
            if needle in tail + chunk:
                return True
            tail = chunk[-(len(needle) - 1):] if len(needle) > 1 else b""
    return False


def holding(files: dict[str, Path], marker: str) -> list[str]:
    return [name for name, path in files.items() if path.exists() and _contains(path, marker.encode())]


def down_value(blocks: list[dict]) -> str:
    return next(e["value"] for b in blocks if b.get("type") == "actions" for e in b["elements"]
                if e["action_id"] == "feedback_down")


async def test_slack_private_questions_answers_and_comments_are_kept_nowhere(make_bot, fake_slack, llm, kb_runtime):
    slack = await make_bot(store_text=True, channel_answer_modes={"C0PRIV": "private"}, escalation_channel=ESC)
    askdesk = slack.bot.services.askdesk

    # 1. the private command
    llm.script(AGENT, final("Zq1answerslash: you have 12 days of leave left [1].", KB_DOC))
    assert await slack.command("Zq1askslash how much leave do I have?", command="/askdesk", hook="priv") == 200
    [response] = await fake_slack.wait_for("response_url:priv")
    await slack.bot.drain()
    assert "Zq1answerslash" in json.dumps(response.args["blocks"])
    slash_down = down_value(response.args["blocks"])
    # 2. the private word in a channel, 3. a channel in private mode, 4. the private word in a DM
    turns = [("Zq2askword", "Zq2answerword", dict(channel="C0001", ts="1700050000.000100", text="privately: ")),
             ("Zq3askmode", "Zq3answermode", dict(channel="C0PRIV", ts="1700050100.000100", text="")),
             ("Zq4askdm", "Zq4answerdm", dict(channel="D0001", ts="1700050200.000100", text="privately "))]
    for ask, answer, where in turns:
        llm.script(AGENT, final(f"{answer}: a family of 3 pays $45 a week [1].", KB_DOC))
        question = f"{where['text']}{ask} what does a family of 3 pay?"
        if where["channel"].startswith("D"):
            await slack.dm(question, ts=where["ts"], channel=where["channel"])
        else:
            await slack.mention(question, ts=where["ts"], channel=where["channel"])
        await slack.bot.drain()
    ephemeral = [c.args for c in fake_slack.calls_to("chat.postEphemeral")]
    assert "Zq2answerword" in json.dumps(ephemeral[0]["blocks"])
    assert "Zq3answermode" in json.dumps(ephemeral[1]["blocks"])
    [dm_answer] = bot_messages(fake_slack, "D0001", "1700050200.000100")
    assert "Zq4answerdm" in json.dumps(dm_answer)
    assert not any(b["action_id"] in ("escalate", "search_anyway") for b in buttons(dm_answer))  # not passed on

    # 👎 on private answers: stored, but no comment box; a comment submitted anyway is not kept
    for value, channel, ts in ((slash_down, "C0001", None), (down_value(ephemeral[0]["blocks"]), "C0001", None),
                               (down_value(dm_answer["blocks"]), "D0001", "1700050200.000100")):
        await slack.click("feedback_down", value, channel=channel, thread_ts=ts)
        await slack.bot.drain()
        assert "Ask a person" not in json.dumps(fake_slack.calls_to("chat.postEphemeral")[-1].args)
        view = comment_view(json.loads(value)["a"], askdesk.prompts)
        await slack.submit_view(view, {"comment": {"comment_text": {"type": "plain_text_input",
                                                                     "value": "Zq5comment the leave is wrong"}}})
        await slack.bot.drain()
    assert fake_slack.calls_to("views.open") == []
    rows = await askdesk.state.recent_feedback()
    assert len(rows) == 3 and all(r.comment is None and r.question is None for r in rows)

    # the control: a public question and its comment are kept (store_text), and the search finds them
    llm.script(AGENT, final("Zq9answerpublic: families of 4 qualify [1].", KB_DOC))
    await slack.mention("Zq9askpublic who is eligible by income?", ts="1700050900.000100")
    await slack.bot.drain()
    [public] = bot_messages(fake_slack, "C0001", "1700050900.000100")
    value = down_value(public["blocks"])
    await slack.click("feedback_down", value, message_ts=public["ts"], thread_ts="1700050900.000100")
    await slack.bot.drain()
    await slack.submit_view(comment_view(json.loads(value)["a"], askdesk.prompts), {"comment": {"comment_text": {
        "type": "plain_text_input", "value": "Zq9comment too vague"}}})
    await slack.bot.drain()

    files = stored_bytes(askdesk.settings.data_dir, kb_runtime.settings.data_dir)
    assert any(name.endswith("askdesk.sqlite") for name in files)
    assert holding(files, "Zq9askpublic") and holding(files, "Zq9comment")  # the search can fail
    for marker in ("Zq1askslash", "Zq1answerslash", "Zq2askword", "Zq2answerword", "Zq3askmode", "Zq3answermode",
                   "Zq4askdm", "Zq4answerdm", "Zq5comment"):
        assert holding(files, marker) == [], marker


async def test_teams_private_questions_answers_and_comments_are_kept_nowhere(make_teams_bot, connector, llm,
                                                                              kb_runtime):
    teams = await make_teams_bot(store_text=True, channel_answer_modes={CHANNEL_ID: "private"},
                                 escalation_channel="19:escalate-0001@thread.tacv2")
    askdesk = teams.bot.askdesk
    chat = group_conversation()
    channel = channel_conversation("1700060000001")
    personal = personal_conversation()

    async def ask(question: str, answer: str, conversation: dict) -> dict:
        llm.script(AGENT, final(f"{answer}: a family of 3 pays $45 a week [1].", KB_DOC))
        await teams.say(question, conversation=conversation, mention=conversation is not personal)
        await teams.bot.drain()
        return [m for m in connector.sent_messages() if answer in (m.get("text") or "")][-1]

    in_channel = await ask("Zq1askmode what does a family of 3 pay?", "Zq1answermode", channel)  # private mode
    in_chat = await ask("privately Zq2askword what does a family of 3 pay?", "Zq2answerword", chat)
    in_personal = await ask("privately Zq3askpersonal what does a family of 3 pay?", "Zq3answerpersonal", personal)
    connector.script(lambda call: call.targeted, 400, "Targeted messages are not supported")
    fallback = await ask("privately: Zq4askfallback what does a family of 3 pay?", "Zq4answerfallback", chat)
    assert in_channel["_targeted_to"] and in_chat["_targeted_to"] and fallback["conversation"]["id"].startswith(
        "a:created-")
    assert connector.visible_to_everyone(channel["id"]) == connector.visible_to_everyone(chat["id"]) == []
    assert not any("Ask a person" in str(m.get("attachments")) for m in (in_channel, in_chat, in_personal, fallback))

    # 👎 with a comment on each: the rating is stored, the comment is not, and nothing offers "Ask a person"
    for message in (in_channel, in_chat, in_personal, fallback):
        where = {"id": message["conversation"]["id"], "tenantId": TENANT_ID,
                 "conversationType": "personal" if message is in_personal or message is fallback else "groupChat"}
        status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="dislike",
                                                     reply_to_id=message["id"], conversation=where,
                                                     comment="Zq5comment the leave is wrong"))
        assert status == 200
    await teams.bot.drain()
    rows = await askdesk.state.recent_feedback()
    assert len(rows) == 4 and all(r.comment is None and r.question is None for r in rows)
    assert not any("Ask a person" in str(m.get("attachments")) for m in connector.sent_messages())
    # a press naming a private answer passes nothing on, whoever presses it
    record = await askdesk.state.answer_by_message(channel["id"], in_channel["id"])
    assert record is not None and record.private and record.asker == "29:user-ada" and record.question is None
    status, _ = await teams.post(card_submit(connector.service_url, {
        "askdesk": "escalate", "a": record.answer_id, "q": "Zq6forged what does a family of 3 pay?"},
        conversation=channel, reply_to_id=in_channel["id"]))
    await teams.bot.drain()
    assert status == 200 and not [c for c in connector.created if c.get("isGroup")]  # nothing posted for a person
    assert await askdesk.state.escalations(datetime.now(timezone.utc) - timedelta(hours=1)) == []

    # the control: a public question, its answer and a comment are kept, and the search finds them
    other_chat = group_conversation("19:group-0002@thread.v2")
    public = await ask("Zq9askpublic who is eligible by income?", "Zq9answerpublic", other_chat)
    await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=public["id"],
                                     conversation=other_chat, comment="Zq9comment vague"))
    await teams.bot.drain()

    files = stored_bytes(askdesk.settings.data_dir, kb_runtime.settings.data_dir)
    assert any(name.endswith("askdesk.sqlite") for name in files)
    for marker in ("Zq9askpublic", "Zq9answerpublic", "Zq9comment"):  # the search can fail
        assert holding(files, marker), marker
    for marker in ("Zq1askmode", "Zq1answermode", "Zq2askword", "Zq2answerword", "Zq3askpersonal",
                   "Zq3answerpersonal", "Zq4askfallback", "Zq4answerfallback", "Zq5comment", "Zq6forged"):
        assert holding(files, marker) == [], marker
