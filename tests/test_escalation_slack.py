""""Ask a person" on Slack end to end, offline: the real bot (Bolt over HTTP, the real Askdesk
on a small knowledge base, the fake LLM) against the recording fake Slack Web API. A 👎 opens
the comment box and offers "Ask a person"; the question goes to the escalation channel; a
person's first reply there is relayed to the asker; "Save as answer" makes it a learned answer
that the next question's search finds and cites; `remove` takes it out again."""

from __future__ import annotations

import json
import logging

import pytest

from agent.answers import AnswerResult
from bot.slack.app import make_client
from bot.slack.reply import Features, SlackReply
from bot.slack.settings import SlackSettings
from bot.turn import Delivery, Incoming
from tests.fakes.slack_api import BOT_USER_ID, message_event
from tests.test_slack_bot import AGENT, KB_DOC, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401

ESC = "CESCALATE"
QUESTION = "can a grandparent pick up my child from the child care center?"
EXPERT_ANSWER = "Yes: any adult the parent lists on the enrollment form, grandparents included, with a photo ID."


def buttons(message: dict) -> list[dict]:
    return [e for b in message.get("blocks") or [] if b.get("type") == "actions" for e in b["elements"]]


async def ask_and_thumbs_down(slack, fake_slack, llm, ts: str) -> tuple[dict, dict]:
    """Ask, get an answer, press 👎: (the answer message, the thanks' "Ask a person" button)."""
    llm.script(AGENT, final("I could not find who may pick up a child.", KB_DOC))
    fake_slack.add_thread("C0001", [{"ts": ts, "user": "U0001", "text": f"<@{BOT_USER_ID}> {QUESTION}"}])  # as Slack keeps it
    await slack.mention(QUESTION, ts=ts)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    down = next(b for b in buttons(answer) if b["action_id"] == "feedback_down")
    assert await slack.click("feedback_down", down["value"], message_ts=answer["ts"], thread_ts=ts) == 200
    await slack.bot.drain()
    thanks = fake_slack.calls_to("chat.postEphemeral")[-1].args
    [ask] = [e for b in thanks["blocks"] if b.get("type") == "actions" for e in b["elements"]]
    assert "Ask a person" in ask["text"]["text"]
    return answer, ask


async def test_thumbs_down_ask_a_person_relay_save_and_cite(make_bot, fake_slack, llm):
    slack = await make_bot(escalation_channel=ESC, store_text=False)
    askdesk = slack.bot.services.askdesk
    ts = "1700003000.000100"
    answer, ask = await ask_and_thumbs_down(slack, fake_slack, llm, ts)

    # the comment box: opened with the click's trigger, its text stored with the 👎
    [opened] = fake_slack.calls_to("views.open")
    view = opened.args["view"]
    assert opened.args["trigger_id"] and view["callback_id"] == "feedback_comment"
    assert await slack.submit_view(view, {"comment": {"comment_text": {
        "type": "plain_text_input", "value": "It does not say who may pick up"}}}) == 200
    await slack.bot.drain()
    [row] = await askdesk.state.recent_feedback()
    assert (row.rating, row.comment, row.question) == ("down", "It does not say who may pick up", None)

    # "Ask a person": posted in the escalation channel with the question, the attempt and a link back
    assert await slack.click("escalate", ask["value"], message_ts="1700009999.000100", thread_ts=ts) == 200
    await slack.bot.drain()
    [post] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == ESC]
    posted = json.dumps(post["blocks"])
    assert QUESTION in posted and "I could not find who may pick up" in posted
    assert "https://fake.slack.com/archives/C0001/p" in posted and "<@U0001>" in post["text"]
    [escalation] = [e for e in await _escalations(askdesk)]
    assert (escalation.asker, escalation.conversation, escalation.thread, escalation.question) == (
        "U0001", "C0001", ts, QUESTION)
    assert escalation.target_thread and escalation.sources == [KB_DOC]
    assert "passed your question on" in bot_messages(fake_slack, "C0001", ts)[-1]["text"]
    # a second press does not post it twice
    await slack.click("escalate", ask["value"], thread_ts=ts)
    await slack.bot.drain()
    assert len([c for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == ESC]) == 1

    # a person's first reply in the escalation thread goes back to the asker, attributed; the second does not
    await slack.send_event(message_event(EXPERT_ANSWER, channel=ESC, ts="1700003100.000100",
                                         thread_ts=escalation.target_thread, user="UEXPERT"))
    await slack.send_event(message_event("also bring the child's card", channel=ESC, ts="1700003100.000200",
                                         thread_ts=escalation.target_thread, user="UOTHER"))
    await slack.bot.drain()
    relayed = bot_messages(fake_slack, "C0001", ts)[-1]
    assert "<@UEXPERT>" in relayed["text"] and "grandparents included" in json.dumps(relayed["blocks"])
    assert not any("child's card" in json.dumps(m) for m in bot_messages(fake_slack, "C0001", ts))
    assert not llm.requests_for(AGENT)[1:]  # the escalation made no model call
    saved = await askdesk.state.escalation(escalation.id)
    assert (saved.status, saved.expert_id, saved.expert_name) == ("answered", "UEXPERT", "Person UEXPERT")

    # "Save as answer" in the escalation thread: a learned file, ingested at once
    offer = bot_messages(fake_slack, ESC, escalation.target_thread)[-1]
    [save] = buttons(offer)
    assert "Save as answer" in save["text"]["text"]
    await slack.click("save_answer", save["value"], channel=ESC, message_ts=offer["ts"],
                      thread_ts=escalation.target_thread, user="UEXPERT")
    await slack.bot.drain()
    [learned] = askdesk.learned()
    path = askdesk.settings.learned_path / learned.name
    text = path.read_text()
    assert f"\n# {QUESTION}\n" in text and EXPERT_ANSWER in text and "Answered by Person UEXPERT on" in text
    assert (await askdesk.state.escalation(escalation.id)).saved_as == learned.name
    assert "Saved as a learned answer" in fake_slack.calls_to("chat.postEphemeral")[-1].args["text"]

    # the next time the question is asked, the search finds the learned answer and the answer cites it
    llm.script(AGENT, final("Yes, a listed grandparent may [1].", learned.name))
    await slack.mention("who may pick up my child from child care? can a grandparent?", ts="1700003200.000100")
    await slack.bot.drain()
    assert "Answered by Person UEXPERT" in llm.requests_for(AGENT)[-1].text  # prefetched before the model call
    [cited] = bot_messages(fake_slack, "C0001", "1700003200.000100")
    assert "grandparent" in json.dumps(cited["blocks"]).lower() and "[1]" in json.dumps(cited["blocks"])

    # removed: gone from the folder and from the search
    assert await askdesk.remove_learned(learned.name) and not path.exists() and askdesk.learned() == []
    llm.script(AGENT, final("Not found.", KB_DOC))
    await slack.mention("who may pick up my child from child care? can a grandparent?", ts="1700003300.000100")
    await slack.bot.drain()
    assert "Answered by Person UEXPERT" not in llm.requests_for(AGENT)[-1].text


async def _escalations(askdesk):
    from datetime import datetime, timedelta, timezone

    return await askdesk.state.escalations(datetime.now(timezone.utc) - timedelta(hours=1))


async def test_an_unanswerable_question_gets_ask_a_person_on_its_answer(make_bot, fake_slack, llm):
    slack = await make_bot(escalation_channel=ESC)
    ts = "1700003500.000100"
    unsure = {"step": {"kind": "final_answer", "answer": "I couldn't find this in the documents.", "confidence": 0.1,
                       "references": []}}
    llm.script(AGENT, unsure)
    fake_slack.add_thread("C0001", [{"ts": ts, "user": "U0001", "text": f"<@{BOT_USER_ID}> {QUESTION}"}])
    await slack.mention(QUESTION, ts=ts)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    [ask] = [b for b in buttons(answer) if b["action_id"] == "escalate"]  # in the answer's own message
    assert "Ask a person" in ask["text"]["text"] and len(llm.requests_for(AGENT)) == 1
    await slack.click("escalate", ask["value"], message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [post] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == ESC]
    assert QUESTION in json.dumps(post["blocks"]) and "couldn't find this in the documents" in json.dumps(post["blocks"])
    [escalation] = await _escalations(slack.bot.services.askdesk)
    assert escalation.target_thread and "couldn't find this in the documents" in escalation.attempt


async def test_an_unanswerable_answer_offers_ask_a_person_in_the_same_message(make_bot, fake_slack, monkeypatch):
    slack = await make_bot(escalation_channel=ESC)
    client = make_client(SlackSettings(api_url=fake_slack.api_url), "xoxb-test")
    result = AnswerResult(answer="I couldn't find this in the documents.", route="knowledge", unanswerable=True)
    for offered in (True, False):  # the turn runner decides (bot/turn.py); the reply draws what it is told
        reply = SlackReply(client, channel="C0001", thread_ts="1700004000.000100", team_id="T0001", streaming=False,
                           features=Features())
        await reply.finish(Delivery(result=result, answer_id="a1", notice=None, feedback=True, ask_a_person=offered))
        message = fake_slack.calls_to("chat.postMessage")[-1].args
        labels = [b["text"]["text"] for b in buttons(message)]
        assert any("Ask a person" in label for label in labels) is offered
    # the runner offers it on an unanswerable answer of a question that may be passed on, only
    runner = slack.bot.services.runner
    assert runner.escalation_target("slack") == ("slack", ESC)
    for unanswerable, private in ((True, False), (False, False), (True, True)):
        async def answered(request, **_):
            return result.model_copy(update={"unanswerable": unanswerable})

        monkeypatch.setattr(runner.askdesk, "answer", answered)
        reply = SlackReply(client, channel="C0001", thread_ts="1700004000.000100", team_id="T0001", streaming=False,
                           features=Features())
        delivery = await runner.run(Incoming(surface="slack", text="who is eligible?", thread_id="C0001:t",
                                             user_id="U0001", private=private), reply)
        assert delivery is not None and delivery.ask_a_person is (unanswerable and not private)


async def test_without_an_escalation_channel_no_button_is_offered(make_bot, fake_slack, llm):
    slack = await make_bot()
    llm.script(AGENT, final("Rate me.", KB_DOC))
    await slack.mention("who is eligible?", ts="1700004500.000100")
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", "1700004500.000100")
    down = next(b for b in buttons(answer) if b["action_id"] == "feedback_down")
    await slack.click("feedback_down", down["value"], message_ts=answer["ts"], thread_ts="1700004500.000100")
    await slack.bot.drain()
    assert "Ask a person" not in json.dumps(fake_slack.calls_to("chat.postEphemeral")[-1].args)


@pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel"])
async def test_escalation_channel_unusable_tells_the_asker_and_keeps_the_question(make_bot, fake_slack, llm, error):
    slack = await make_bot(escalation_channel=ESC)
    ts = "1700005000.000100"
    _, ask = await ask_and_thumbs_down(slack, fake_slack, llm, ts)
    fake_slack.script("chat.postMessage", body={"ok": False, "error": error})
    await slack.click("escalate", ask["value"], thread_ts=ts)
    await slack.bot.drain()
    note = fake_slack.calls_to("chat.postEphemeral")[-1].args
    assert "couldn't pass your question on" in note["text"] and note["user"] == "U0001"
    [kept] = await _escalations(slack.bot.services.askdesk)
    assert kept.question == QUESTION and kept.status == "open" and kept.target_thread is None


async def test_relay_to_a_deleted_thread_is_logged_once(make_bot, fake_slack, llm, caplog):
    slack = await make_bot(escalation_channel=ESC)
    ts = "1700006000.000100"
    _, ask = await ask_and_thumbs_down(slack, fake_slack, llm, ts)
    await slack.click("escalate", ask["value"], thread_ts=ts)
    await slack.bot.drain()
    [escalation] = await _escalations(slack.bot.services.askdesk)
    fake_slack.script("chat.postMessage", body={"ok": False, "error": "thread_not_found"})
    caplog.set_level(logging.INFO, logger="askdesk")
    await slack.send_event(message_event(EXPERT_ANSWER, channel=ESC, ts="1700006100.000100",
                                         thread_ts=escalation.target_thread, user="UEXPERT"))
    await slack.bot.drain()
    lines = [r for r in caplog.records if "could not be relayed" in r.getMessage()]
    assert len(lines) == 1 and lines[0].exc_info is None and "thread_not_found" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.exc_info]
