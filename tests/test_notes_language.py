"""Notes said outside a turn are in the asker's language (issue 34), end to end offline: the real
Slack bot (Bolt over HTTP) and the real Teams bot (the Teams SDK in dev mode) over the real
Askdesk, against the recording fake Slack Web API and the fake Bot Connector.

A button pressed later says its thanks and refusals in the answer's language (the button carries
it); a welcome is said in the person's Slack or Teams language; a registry command in its text's
language, else the person's. The expected sentences are rendered from the prompt set, never
written here, and each differs from the English one (so English cannot pass for it).
"""

from __future__ import annotations

import json
from datetime import datetime, timezone

import pytest

from agent.answers import PendingAction, ProposedCall
from agent.clock import ManualClock
from agent.knowledge.learned_review import Reviews
from agent.learned import LearnedAnswer, Owner, Reminder
from agent.prompts import ENGLISH, PromptSet, default_prompts
from agent.references import Reference
from bot.confirm import CONFIRM, value_of
from bot.slack.blocks import BUTTON_VALUE_CHARS, FEEDBACK_DOWN, FEEDBACK_UP, feedback_value
from bot.slack.escape import safe_mrkdwn
from bot.slack.learned_review import notifier as slack_notifier
from bot.teams.app import surface_prompts
from bot.teams.escape import teams_text
from bot.teams.learned_review import review_card
from tests.fakes.slack_api import BOT_USER_ID, message_event
from tests.fakes.teams_connector import (
    channel_conversation,
    feedback_invoke,
    installation_update,
    personal_conversation,
)
from tests.test_escalation_slack import buttons
from tests.test_escalation_teams import actions, escalations, press
from tests.test_slack_bot import AGENT, KB_DOC, bot_messages, fake_slack, final, llm, make_bot  # noqa: F401
from tests.test_teams_bot import connector, make_bot as make_teams_bot  # noqa: F401

ASKER, OTHER = "U0001", "U0002"
T_ASKER, T_OTHER = "29:user-ada", "29:user-bea"
SLACK_ESC, TEAMS_ESC = "CESCALATE", "19:escalate-0001@thread.tacv2"
START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
QUESTIONS = {  # questions about the small knowledge base's documents (no off-topic refusal)
    "es": "¿Puede un abuelo recoger a mi hijo del centro de cuidado infantil?",
    "vi": "Phụ huynh phải trả bao nhiêu phí chăm sóc trẻ em theo thu nhập?",
    "en": "Can a grandparent pick up my child from the child care center?",
}
OFFTOPIC = {"es": "¿Quién ganó el partido de fútbol de anoche en la liga?",
            "vi": "Ai đã thắng trận bóng đá tối qua ở giải đấu?"}


def said(prompts: PromptSet, name: str, lang: str, **values) -> str:
    """`name` in `lang`, checked to differ from its English (a translation the test can tell apart)."""
    text = prompts.get(name, lang).render(**values)
    assert lang == ENGLISH or text != prompts.get(name, ENGLISH).render(**values), f"{name} is not translated"
    return text


def ephemerals(fake_slack, user: str) -> list[dict]:
    return [c.args for c in fake_slack.calls_to("chat.postEphemeral") if c.args["user"] == user]


# --- Slack: buttons ----------------------------------------------------------------------------------


async def slack_answer(slack, fake_slack, llm, lang: str, ts: str) -> dict:
    llm.script(AGENT, final("The parent share of cost follows income [1].", KB_DOC))
    fake_slack.add_thread("C0001", [{"ts": ts, "user": ASKER, "text": f"<@{BOT_USER_ID}> {QUESTIONS[lang]}"}])
    await slack.mention(QUESTIONS[lang], ts=ts, user=ASKER)
    await slack.bot.drain()
    [answer] = bot_messages(fake_slack, "C0001", ts)
    return answer


@pytest.mark.parametrize("lang", ["es", "vi", "en"])
async def test_slack_thumbs_up_thanks_in_the_answers_language(make_bot, fake_slack, llm, lang):
    slack = await make_bot()
    ts = {"es": "1700050001.000100", "vi": "1700050002.000100", "en": "1700050003.000100"}[lang]
    answer = await slack_answer(slack, fake_slack, llm, lang, ts)
    up = next(b for b in buttons(answer) if b["action_id"] == FEEDBACK_UP)
    assert json.loads(up["value"])["l"] == lang  # the button carries the answer's language

    assert await slack.click(FEEDBACK_UP, up["value"], user=ASKER, message_ts=answer["ts"], thread_ts=ts) == 200
    await slack.bot.drain()
    [thanks] = ephemerals(fake_slack, ASKER)
    assert thanks["text"] == said(slack.bot.services.askdesk.prompts, "feedback_thanks", lang)


async def test_slack_thumbs_down_comment_box_and_ask_a_person_in_vietnamese(make_bot, fake_slack, llm):
    slack = await make_bot(escalation_channel=SLACK_ESC)
    prompts = slack.bot.services.askdesk.prompts
    ts = "1700050100.000100"
    answer = await slack_answer(slack, fake_slack, llm, "vi", ts)
    down = next(b for b in buttons(answer) if b["action_id"] == FEEDBACK_DOWN)

    await slack.click(FEEDBACK_DOWN, down["value"], user=ASKER, message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [box] = fake_slack.calls_to("views.open")
    assert box.args["view"]["submit"]["text"] == said(prompts, "feedback_comment_submit", "vi")[:24]
    [thanks] = ephemerals(fake_slack, ASKER)
    assert thanks["text"] == said(prompts, "feedback_thanks", "vi")
    [ask] = [e for b in thanks["blocks"] if b.get("type") == "actions" for e in b["elements"]]
    assert ask["text"]["text"] == "🙋 " + said(prompts, "escalate_button", "vi")

    # pressed: the asker is told in Vietnamese, and the escalation keeps its language
    await slack.click("escalate", ask["value"], user=ASKER, message_ts=answer["ts"], thread_ts=ts)
    await slack.bot.drain()
    [escalation] = await escalations(slack.bot.services.askdesk)
    assert escalation.language == "vi"
    assert bot_messages(fake_slack, "C0001", ts)[-1]["text"] == said(prompts, "escalation_passed_on", "vi")
    [post] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == SLACK_ESC]
    assert post["text"] == said(prompts, "escalation_heading", "vi", asker=f"<@{ASKER}>")

    # an expert's reply: relayed under a Vietnamese heading, "Save as answer" offered in Vietnamese
    await slack.send_event(message_event("Phí được tính theo thu nhập gia đình.", channel=SLACK_ESC,
                                         ts="1700050150.000100", thread_ts=escalation.target_thread, user="UEXPERT"))
    await slack.bot.drain()
    assert bot_messages(fake_slack, "C0001", ts)[-1]["text"] == said(prompts, "escalation_relayed", "vi",
                                                                     expert="<@UEXPERT>")
    offer = bot_messages(fake_slack, SLACK_ESC, escalation.target_thread)[-1]
    assert offer["text"] == said(prompts, "escalation_relay_done", "vi")
    [save] = buttons(offer)
    assert save["text"]["text"] == "💾 " + said(prompts, "save_answer_button", "vi")
    await slack.click("save_answer", save["value"], user=OTHER, channel=SLACK_ESC, message_ts=offer["ts"],
                      thread_ts=escalation.target_thread)
    await slack.bot.drain()
    assert ephemerals(fake_slack, OTHER)[-1]["text"] == said(prompts, "button_expert_only", "vi")


async def test_slack_search_anyway_refused_to_another_person_in_spanish(make_bot, fake_slack, llm):
    slack = await make_bot()
    prompts = slack.bot.services.askdesk.prompts
    ts = "1700050200.000100"
    fake_slack.add_thread("C0001", [{"ts": ts, "user": ASKER, "text": f"<@{BOT_USER_ID}> {OFFTOPIC['es']}"}])
    await slack.mention(OFFTOPIC["es"], ts=ts, user=ASKER)
    await slack.bot.drain()
    [refusal] = bot_messages(fake_slack, "C0001", ts)
    [anyway] = [b for b in buttons(refusal) if b["action_id"] == "search_anyway"]
    assert anyway["text"]["text"] == "🔎 " + said(prompts, "search_anyway_button", "es")

    await slack.click("search_anyway", anyway["value"], user=OTHER, message_ts=refusal["ts"], thread_ts=ts,
                      message=refusal)
    await slack.bot.drain()
    [note] = ephemerals(fake_slack, OTHER)
    assert note["text"] == said(prompts, "button_asker_only", "es")
    assert not llm.requests_for(AGENT)  # refused: nothing searched


async def test_slack_confirm_refused_to_another_person_in_the_questions_language(make_bot, fake_slack):
    slack = await make_bot()
    action = PendingAction(id="p1", calls=[ProposedCall(tool="book_room", arguments={"room": "B2"})], asker=ASKER,
                           surface="slack", thread_id="C0001:1700050250.000100",
                           question="¿Puedes reservar la sala B2 para el martes por la tarde?")
    await slack.click(CONFIRM, value_of(action), user=OTHER, thread_ts="1700050250.000100")
    await slack.bot.drain()
    [note] = ephemerals(fake_slack, OTHER)
    assert note["text"] == said(slack.bot.services.askdesk.prompts, "action_not_yours", "es")


async def test_a_button_made_before_it_carried_a_language_is_answered_in_english(make_bot, fake_slack):
    slack = await make_bot()
    old = json.dumps({"a": "gone", "r": "knowledge", "s": [KB_DOC]}, separators=(",", ":"))
    forged = json.dumps({"a": "gone", "r": "knowledge", "l": "xx", "s": []}, separators=(",", ":"))
    for value in (old, forged):
        await slack.click(FEEDBACK_UP, value, user=ASKER, thread_ts="1700050300.000100")
    await slack.bot.drain()
    english = slack.bot.services.askdesk.prompts.get("feedback_thanks", ENGLISH).render()
    assert [t["text"] for t in ephemerals(fake_slack, ASKER)] == [english, english]


# --- Slack: welcome and commands ---------------------------------------------------------------------


def test_the_language_fits_the_button_value_cap():
    """Sources give way to the language: the value stays valid JSON within Slack's 2,000 characters."""
    refs = [Reference(source="s" * 400 + str(i)) for i in range(8)]
    value = feedback_value("id", "knowledge", refs, "vi")
    data = json.loads(value)
    assert len(value) <= BUTTON_VALUE_CHARS and data["l"] == "vi" and data["a"] == "id"
    assert 0 < len(data["s"]) < len(refs)
    assert json.loads(feedback_value("id", "knowledge", refs[:1], "vi"))["s"] == [refs[0].source]


def opened(user: str, channel: str, ts: str) -> dict:
    return {"type": "app_home_opened", "user": user, "channel": channel, "tab": "messages", "event_ts": ts}


async def test_slack_welcome_in_the_users_slack_language(make_bot, fake_slack):
    slack = await make_bot(slack_suggested_prompts=["Who is eligible?"])
    askdesk = slack.bot.services.askdesk
    fake_slack.locales |= {"UVI": "vi-VN", "UES": "es-LA"}  # UEN: Slack's default, en-US
    for n, user in enumerate(("UVI", "UES", "UEN")):
        assert await slack.send_event(opened(user, f"D{user}", f"170005040{n}.000100")) == 200
    await slack.bot.drain()
    welcomes = {c.args["channel"]: c.args["text"] for c in fake_slack.calls_to("chat.postMessage")}
    commands = askdesk.commands()
    assert welcomes == {f"D{user}": said(askdesk.prompts, "welcome", lang, user=user, commands=commands)
                        for user, lang in (("UVI", "vi"), ("UES", "es"), ("UEN", "en"))}
    titles = [c.args["title"] for c in fake_slack.calls_to("assistant.threads.setSuggestedPrompts")]
    assert titles == [said(askdesk.prompts, "suggested_prompts_title", lang) for lang in ("vi", "es", "en")]
    assert all(c.args.get("include_locale") for c in fake_slack.calls_to("users.info"))


async def test_slack_welcome_is_sent_in_english_when_the_locale_cannot_be_read(make_bot, fake_slack):
    slack = await make_bot()
    fake_slack.script("users.info", body={"ok": False, "error": "missing_scope"})
    assert await slack.send_event(opened("UVI", "DUVI", "1700050500.000100")) == 200
    await slack.bot.drain()
    [welcome] = fake_slack.calls_to("chat.postMessage")
    askdesk = slack.bot.services.askdesk
    assert welcome.args["text"] == said(askdesk.prompts, "welcome", "en", user="UVI", commands=askdesk.commands())


async def test_slack_registry_command_in_its_texts_language_else_the_users(make_bot, fake_slack):
    slack = await make_bot()
    prompts = slack.bot.services.askdesk.prompts
    fake_slack.locales["UVI"] = "vi-VN"
    cases = [("guarderías para bebés cerca de 78702", ASKER, "es"),  # the text tells
             ("78702", "UVI", "vi"),  # too short to tell: the person's Slack language
             ("infant care near 78702", ASKER, "en")]
    shares = {}
    for n, (text, user, lang) in enumerate(cases):
        assert await slack.command(text, user=user, hook=f"lang{n}") == 200
        assert json.loads(slack.last_body)["text"] == said(prompts, "command_searching", lang, records="facilities")
        [response] = await fake_slack.wait_for(f"response_url:lang{n}")
        [shares[lang]] = [e for b in response.args["blocks"] if b["type"] == "actions" for e in b["elements"]]
        assert shares[lang]["text"]["text"] == said(prompts, "share_in_channel", lang)

    # shared later: the copy in the channel is said in the language its button carries
    assert json.loads(shares["es"]["value"])["l"] == "es"
    await slack.click("records_share", shares["es"]["value"], user=ASKER, hook="shared")
    await fake_slack.wait_for("response_url:shared", count=2)  # the copy, then the private one deleted
    [shared] = [c for c in fake_slack.calls_to("response_url:shared") if c.args.get("response_type") == "in_channel"]
    assert shared.args["blocks"][0]["text"]["text"].endswith(" — " + said(prompts, "records_shared_by", "es",
                                                                             user=ASKER))


async def test_slack_private_command_usage_in_the_users_slack_language(make_bot, fake_slack):
    slack = await make_bot()
    prompts = slack.bot.services.askdesk.prompts
    fake_slack.locales["UES"] = "es-ES"
    for user, lang in (("UES", "es"), (ASKER, "en")):
        assert await slack.command("", command="/askdesk", user=user, hook=f"usage-{user}") == 200
        assert json.loads(slack.last_body)["text"] == safe_mrkdwn(said(prompts, "private_usage", lang,
                                                                       command="/askdesk"))


# --- Teams ---------------------------------------------------------------------------------------------


def private_notes(connector, conversation: str, user: str) -> list[str]:
    return [c.text for c in connector.calls_in(conversation)
            if c.type == "message" and c.targeted and (c.body.get("recipient") or {}).get("id") == user]


async def test_teams_welcome_in_the_activitys_locale(make_teams_bot, connector):
    teams = await make_teams_bot()
    bot = teams.bot
    sent = {}
    for user, locale in (("29:user-es", "es-ES"), ("29:user-vi", "vi-VN"), ("29:user-fr", "fr-FR")):
        conversation = personal_conversation(user)
        status, _ = await teams.post({**installation_update(connector.service_url, conversation=conversation,
                                                            user=user), "locale": locale})
        assert status == 200
        await bot.drain()
        [welcome] = connector.sent_messages(conversation["id"])
        sent[locale] = welcome["text"]
    identity = bot.askdesk.identity.get(None)
    expected = {locale: teams_text(said(bot.prompts, "teams_welcome", lang, capabilities=identity.capabilities_in(lang),
                                        commands=bot.askdesk.commands(), scope="personal"))
                for locale, lang in (("es-ES", "es"), ("vi-VN", "vi"), ("fr-FR", "en"))}  # French: not spoken
    assert sent == expected


async def test_teams_search_anyway_refused_to_another_person_in_spanish(make_teams_bot, connector, llm):
    teams = await make_teams_bot()
    asked = channel_conversation("1700050600001")
    await teams.say(OFFTOPIC["es"], conversation=asked, user=T_ASKER, mention=True)
    await teams.bot.drain()
    [refusal] = connector.sent_messages(asked["id"])
    [button] = actions(refusal)
    assert button["title"] == "🔎 " + said(teams.bot.prompts, "search_anyway_button", "es")
    assert button["data"]["l"] == "es"

    await press(teams, button["data"], asked, user=T_OTHER, user_name="Bea", reply_to_id=refusal["id"])
    assert private_notes(connector, asked["id"], T_OTHER) == [teams_text(said(teams.bot.prompts,
                                                                              "button_asker_only", "es"))]
    assert not llm.requests_for(AGENT)


async def test_teams_thumbs_down_thanks_in_vietnamese(make_teams_bot, connector, llm):
    teams = await make_teams_bot(escalation_channel_teams=TEAMS_ESC)
    prompts = teams.bot.prompts
    asked = personal_conversation(T_ASKER)
    llm.script(AGENT, final("The parent share of cost follows income [1].", KB_DOC))
    await teams.say(QUESTIONS["vi"], conversation=asked, user=T_ASKER)
    await teams.bot.drain()
    [answer] = connector.sent_messages(asked["id"])
    status, _ = await teams.post(feedback_invoke(connector.service_url, reaction="dislike", reply_to_id=answer["id"],
                                                 conversation=asked, user=T_ASKER))
    assert status == 200
    await teams.bot.drain()
    thanks = connector.sent_messages(asked["id"])[-1]
    assert thanks["text"] == teams_text(said(prompts, "feedback_thanks", "vi"))
    [ask] = actions(thanks)
    assert ask["title"] == "🙋 " + said(prompts, "escalate_button", "vi") and ask["data"]["l"] == "vi"

    await press(teams, ask["data"], asked, user=T_ASKER)
    [escalation] = await escalations(teams.bot.askdesk)
    assert escalation.language == "vi"
    assert connector.sent_messages(asked["id"])[-1]["text"] == teams_text(said(prompts, "escalation_passed_on", "vi"))


async def test_teams_registry_command_in_its_texts_language(make_teams_bot, connector):
    teams = await make_teams_bot()
    prompts = teams.bot.prompts
    for user, text, lang in (("29:user-es", "facility guarderías para niños in San Antonio", "es"),
                             ("29:user-en", "facility child care for kids in San Antonio", "en")):
        conversation = personal_conversation(user)
        await teams.say(text, conversation=conversation, user=user)
        await teams.bot.drain()
        [card] = connector.sent_messages(conversation["id"])
        lines = [b["text"] for b in card["attachments"][0]["content"]["body"] if b["type"] == "TextBlock"]
        assert lines[-1] == said(prompts, "records_none", lang, records="facilities")  # none in the test registry


# --- a learned answer's review: in its question's language ----------------------------------------


async def test_slack_review_dm_and_its_notes_in_the_questions_language(make_bot, fake_slack):
    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    answers, prompts, clock = askdesk.learned_answers, askdesk.prompts, ManualClock(START)
    answers.clock = clock
    question = "¿Cuánto paga una familia por el cuidado infantil?"
    name = await askdesk.save_learned(key="E9", question=question, answer="Un porcentaje de sus ingresos.",
                                      expert="Ada", when=clock.now(), owner=Owner(surface="slack", id="UEXPERT"))
    reviews = Reviews(answers, askdesk.state, {"slack": slack_notifier(slack.bot.app.client, prompts)})
    clock.advance(days=170)  # inside the reminder window
    await reviews.run()
    [dm] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "UEXPERT"]
    due = answers.review_by(answers.get(name))
    assert dm["text"] == said(prompts, "learned_review_due", "es", question=question, date=f"{due:%Y-%m-%d}", cited=0)
    confirm = next(b for b in buttons(dm) if b["action_id"] == "learned_confirm")
    assert confirm["text"]["text"] == "✅ " + said(prompts, "learned_confirm_button", "es")

    await slack.click("learned_confirm", confirm["value"], user="UEXPERT", channel="DUEXPERT",
                      message_ts="1700000001.000100")
    await slack.bot.drain()
    [done] = fake_slack.calls_to("chat.update")
    again = answers.review_by(answers.get(name))
    assert done.args["text"] == said(prompts, "learned_confirmed", "es", date=f"{again:%Y-%m-%d}")


def test_teams_review_card_in_the_reminders_language():
    when = datetime(2026, 12, 1, tzinfo=timezone.utc)
    question = "Phụ huynh phải trả bao nhiêu phí chăm sóc trẻ em?"
    answer = LearnedAnswer(name="a.md", question=question, expert="E", date="", answer="Mười phần trăm.",
                           owner=Owner(surface="teams", id="29:user-expert"))
    reminder = Reminder(answer=answer, review_by=when, expired=True, cited=2, language="vi")
    prompts = surface_prompts(default_prompts())
    card = review_card(reminder, prompts)
    assert card.text == teams_text(said(prompts, "learned_review_expired", "vi", question=question, date="2026-12-01",
                                        cited=2))


async def test_a_persons_slack_language_is_asked_once_and_a_failed_answer_is_asked_again(make_bot, fake_slack):
    slack = await make_bot()
    prompts = slack.bot.services.askdesk.prompts
    fake_slack.locales |= {"UES": "es-ES", "UVI": "vi-VN"}
    fake_slack.script("users.info", body={"ok": False, "error": "ratelimited"})  # UVI's first: not read
    expected = [("UVI", "en"), ("UVI", "vi"), ("UES", "es"), ("UES", "es"), ("UVI", "vi")]
    for n, (user, lang) in enumerate(expected):
        assert await slack.command("", command="/askdesk", user=user, hook=f"usage-{n}") == 200
        assert json.loads(slack.last_body)["text"] == safe_mrkdwn(said(prompts, "private_usage", lang,
                                                                       command="/askdesk")), (n, user)
    asked = [c.args["user"] for c in fake_slack.calls_to("users.info")]
    assert asked == ["UVI", "UVI", "UES"]  # the failure was asked again; answers were kept
