"""Teams surface hardening (issue 18), on the real SDK app and the recording fake Bot Connector:

- untrusted text (documents, registries, the model) cannot mention anyone, inject HTML or hide a
  link's address in anything sent to Teams: messages, streamed chunks, cards, compose-box results;
  our own markup (citations, headings, a mention we add) keeps working;
- a user's text sent as HTML (`<p>`, `&nbsp;`, `<at>`) reaches the core as plain text;
- a malformed activity is refused with HTTP 400 and one log line (its id, the failing fields),
  never a traceback or a quote of its content;
- an unreachable Bot Connector costs one WARNING per answer: no traceback, no retries for
  seconds, no "Task exception was never retrieved".
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import re
import socket
import time
from types import SimpleNamespace

import pytest
from microsoft_teams.api import Account

from agent.capabilities.base import Detail, RecordView
from agent.references import Reference
from agent.turn.service import AnswerResult
from bot.teams.cards import extension_attachment, record_card, record_list_card
from bot.teams.escape import ZWSP, teams_text
from bot.teams.incoming import plain_text
from bot.teams.render import answer_activity
from tests.fakes.teams_connector import (
    BOT_NAME,
    channel_conversation,
    extension_query,
    feedback_invoke,
    installation_update,
    invoke_activity,
    mention_entity,
    message_activity,
    personal_conversation,
)
from tests.test_teams_bot import (  # noqa: F401  (fixtures)
    AGENT,
    KB_DOC,
    connector,
    final,
    llm,
    make_bot,
)

MARKER = "SECRETMARKER7731"  # payload text that must never reach a log

# What a document or a model could write to take over a Teams message.
HOSTILE = ("Hi <at>Ada Lovelace</at>, see <a href=\"https://evil.example/a\">the form</a> "
           "<img src=x onerror=alert(1)><script>alert(1)</script> &lt;at&gt;Bea&lt;/at&gt; "
           "and [Click here](https://evil.example/login) or ![logo](https://evil.example/i.png) "
           "or <https://evil.example/auto>.")
RAW_MARKUP = re.compile(r"<(?:/?at\b|a\s|/a>|img\b|script\b)|&(?:lt|gt|#\d+);|\]\(|<https?:", re.IGNORECASE)


def assert_safe(text: str) -> None:
    """No markup Teams would act on: tags, entities that decode to tags, Markdown links."""
    assert not RAW_MARKUP.search(text), text


def visible(text: str) -> str:
    """What the user reads (the zero-width spaces are invisible)."""
    return text.replace(ZWSP, "")


# --- the rendering function -----------------------------------------------------------------------


@pytest.mark.parametrize("untrusted, shown", [
    ("[Click here](https://evil.example)", "Click here (https://evil.example)"),
    ("![logo](https://evil.example/i.png)", "logo (https://evil.example/i.png)"),
    ("[https://good.example](https://good.example)", "https://good.example"),
    ("[label](https://en.wikipedia.org/wiki/Foo_(bar) \"title\")", "label (https://en.wikipedia.org/wiki/Foo_(bar))"),
    ("[[inner](https://a.example)](https://b.example)", "inner (https://a.example) (https://b.example)"),
    ("<https://evil.example/auto>", "https://evil.example/auto"),
    ("<at>Ada</at> says hi", "<at>Ada</at> says hi"),
    ("<a href=\"https://evil.example\">x</a>", "<a href=\"https://evil.example\">x</a>"),
    ("<img src=x onerror=alert(1)><script>alert(1)</script><!-- c -->",
     "<img src=x onerror=alert(1)><script>alert(1)</script><!-- c -->"),
    ("&lt;at&gt;Bea&lt;/at&gt; &#60;b&#62;", "&lt;at&gt;Bea&lt;/at&gt; &#60;b&#62;"),
    ("[x]: https://evil.example\n[see][x]", "[x]: https://evil.example\n[see][x]"),
])
def test_teams_text_shows_markup_as_typed_and_every_link_address(untrusted, shown):
    rendered = teams_text(untrusted)
    assert_safe(rendered)
    assert visible(rendered) == shown  # reads as typed, only links rewritten to show their address
    assert teams_text(rendered) == rendered  # idempotent: safe to render parts, then add our markup
    assert not re.search(r"^ {0,3}\[[^\]]+\]:", rendered, re.MULTILINE)  # no reference definition


def test_teams_text_keeps_markdown_citations_and_ordinary_text():
    text = "**Income** limits [1][2]: `a < b` and x > y, Q&A, AT&T, 5 < 7.\n- item\n\n> quoted"
    assert teams_text(text) == text
    assert teams_text(None) == "" and teams_text("") == ""


def test_answer_rendering_escapes_untrusted_parts_and_keeps_our_markup():
    refs = [Reference(source="a.md", title="Guide <at>Ada</at> [x](https://evil.example)", section="Part <b>2</b>")]
    cited = answer_activity(AnswerResult(answer=HOSTILE + " See [1].", route="knowledge", references=refs,
                                         llm_calls=1, confidence=0.9),
                            notice="Set <at>X</at>", feedback=True, sources_heading="Sources")
    text = cited.activity.text
    assert_safe(text)
    assert "https://evil.example/login" in text and "Click here (https://evil.example/login)" in visible(text)
    assert text.endswith(f"_ℹ️ Set <{ZWSP}at>X<{ZWSP}/at>_")  # our italics around the rendered notice
    body = cited.activity.model_dump(by_alias=True, exclude_none=True)
    [root] = [e for e in body["entities"] if e.get("type") == "https://schema.org/Message"]
    [claim] = root["citation"]  # our citation entity still there, its texts rendered too
    assert claim["position"] == 1
    assert_safe(claim["appearance"]["name"]) and assert_safe(claim["appearance"]["abstract"])
    assert not [e for e in body["entities"] if e.get("type") == "mention"]  # no mention entity from text

    # a mention we add ourselves (the SDK's add_mention) is the only real <at> tag in the message
    cited.activity.add_mention(Account(id="29:ada", name="Ada Lovelace"))
    assert cited.activity.text.count("<at>Ada Lovelace</at>") == 1
    assert cited.activity.text.endswith("<at>Ada Lovelace</at>")

    uncited = answer_activity(AnswerResult(answer="Families qualify.", route="knowledge", references=refs,
                                           llm_calls=1, confidence=0.8), notice=None, feedback=True,
                              sources_heading="Sources")
    assert uncited.activity.text.startswith("Families qualify.\n\n**Sources:** [1] Guide ")  # our bold heading
    assert_safe(uncited.activity.text)


def test_registry_cards_and_compose_box_results_render_record_values():
    view = RecordView(id="r1", title="Acme <at>Everyone</at> [Book now](https://evil.example)",
                      details=[Detail(text="<img src=x> 1 Main St"), Detail(text="555-0100", icon="phone")],
                      more=[Detail(text="Hours: <script>x</script> [site](https://evil.example/h)")])
    result = SimpleNamespace(records=[view], summary="care <a href='https://evil.example'>x</a>", text="",
                             notes=["did you mean [this](https://evil.example/n)?"], total=1)
    command = SimpleNamespace(records="facilities")
    prompts = SimpleNamespace(render=lambda name, **values: f"{name} {values}")
    cards = [record_list_card(result, command, lambda name, **v: f"{v['records']}: {v['summary']}", prompts),
             record_card(view)]
    texts = [json.dumps(card.model_dump(by_alias=True, exclude_none=True), ensure_ascii=False) for card in cards]
    attachment = extension_attachment(view).model_dump(by_alias=True, exclude_none=True)
    preview = attachment["preview"]["content"]  # a thumbnail card: Teams renders HTML there
    for text in [*texts, preview["title"], preview["text"]]:
        assert_safe(text)
    assert "https://evil.example" in texts[0] and "https://evil.example/h" in texts[1]


# --- end to end: what the fake Bot Connector receives ---------------------------------------------


def connector_texts(connector, conversation: str) -> list[str]:
    texts = []
    for call in connector.calls_in(conversation):
        texts.append(call.body.get("text") or "")
        texts.extend(json.dumps(a) for a in call.body.get("attachments") or [])
    return texts


async def test_streamed_chunks_and_final_message_never_carry_untrusted_markup(make_bot, connector, llm, monkeypatch):
    from bot.teams import reply

    monkeypatch.setattr(reply, "STREAM_TEXT_SECONDS", 0.05)  # many small updates: chunk boundaries everywhere
    llm.set_stream_pace(AGENT, first_token=0.05, tokens_per_s=300, chars_per_chunk=3)
    answer = HOSTILE + " Families qualify [1]."
    llm.script(AGENT, final(answer, KB_DOC))
    teams = await make_bot()
    conversation = personal_conversation("29:user-hostile")
    await teams.say("who is eligible?", conversation=conversation, user="29:user-hostile")
    await teams.bot.drain()

    chunks = [c for c in connector.calls_in(conversation["id"]) if c.stream_type == "streaming" and c.text]
    assert len(chunks) >= 3  # really streamed, in pieces
    for text in connector_texts(connector, conversation["id"]):
        assert_safe(text)
    [message] = connector.sent_messages(conversation["id"])
    assert visible(message["text"]).startswith("Hi <at>Ada Lovelace</at>, see <a href=")
    assert "Click here (https://evil.example/login)" in visible(message["text"])
    assert not [e for e in message.get("entities") or [] if e.get("type") == "mention"]
    [root] = [e for e in message["entities"] if e.get("type") == "https://schema.org/Message"]
    assert [c["position"] for c in root["citation"]] == [1]  # our citation survives


async def test_channel_answer_is_rendered_too(make_bot, connector, llm):
    llm.script(AGENT, final(HOSTILE + " [1]", KB_DOC))
    teams = await make_bot()
    thread = channel_conversation("1800000000901")
    await teams.say("who is eligible?", conversation=thread, mention=True, user="29:user-ch")
    await teams.bot.drain()
    [message] = connector.sent_messages(thread["id"])
    for text in connector_texts(connector, thread["id"]):
        assert_safe(text)
    assert "https://evil.example/login" in message["text"]


# --- incoming text --------------------------------------------------------------------------------


@pytest.mark.parametrize("sent, typed", [
    ("<p>who is&nbsp;eligible &amp; when?</p>", "who is eligible & when?"),
    ("<div>first line<br>second&nbsp;&nbsp;line</div><p>next</p>", "first line\nsecond line\n\nnext"),
    ("<p>ask <at>Bea</at> about &lt;income&gt;</p>", "ask Bea about <income>"),
    ("<p>x</p><script>alert(1)</script><style>p{}</style>", "x"),
    ("who\u00a0is eligible?", "who is eligible?"),
    ("is income < 5000 ok? a<b", "is income < 5000 ok? a<b"),  # plain text with a "<" stays as typed
    ("ask <at>Bea</at> about income", "ask Bea about income"),
    ("", ""),
])
def test_plain_text_turns_teams_html_into_what_the_user_typed(sent, typed):
    assert plain_text(sent) == typed


async def test_html_message_with_mention_reaches_the_core_as_plain_text(make_bot, connector, llm):
    llm.script(AGENT, final("Families qualify [1].", KB_DOC))
    teams = await make_bot()
    thread = channel_conversation("1800000000902")
    activity = message_activity(connector.service_url, "", conversation=thread, user="29:user-html",
                                textFormat="xml", entities=[mention_entity()])
    activity["text"] = f"<p><at>{BOT_NAME}</at>&nbsp;who is&nbsp;eligible &amp; when?</p>"  # as some clients send it
    status, _ = await teams.post(activity)
    assert status == 200
    await teams.bot.drain()
    [request] = llm.requests_for(AGENT)
    assert "who is eligible & when?" in request.text
    assert "&nbsp;" not in request.text and "<p>" not in request.text and BOT_NAME + " who" not in request.text
    assert connector.sent_messages(thread["id"])


async def test_html_command_is_recognised(make_bot, connector, llm_server):
    teams = await make_bot()
    conversation = personal_conversation("29:user-htmlcmd")
    await teams.say("<p>facility&nbsp;infant care near 78702</p>", conversation=conversation, user="29:user-htmlcmd")
    await teams.bot.drain()
    [message] = connector.sent_messages(conversation["id"])
    assert message["attachments"][0]["contentType"] == "application/vnd.microsoft.card.adaptive"


# --- malformed activities -------------------------------------------------------------------------


def _message(url: str) -> dict:
    return message_activity(url, f"hello {MARKER} " + "x" * 200, conversation=personal_conversation("29:m"),
                            user="29:m")


def _malformed(url: str) -> dict[str, dict]:
    shapes: dict[str, dict] = {}

    def shape(name: str, change, base=None) -> None:
        activity = base if base is not None else _message(url)
        change(activity)
        shapes[name] = activity

    shape("missing type", lambda a: a.pop("type"))
    shape("type not a string", lambda a: a.update(type=123))
    shape("unknown type", lambda a: a.update(type=MARKER))
    shape("text a list", lambda a: a.update(text=[MARKER]))
    shape("huge text, wrong locale", lambda a: a.update(text=MARKER * 60_000, locale=7))
    shape("no conversation", lambda a: a.pop("conversation"))
    shape("conversation a string", lambda a: a.update(conversation=MARKER))
    shape("sender without id", lambda a: a.update({"from": {"name": MARKER}}))
    shape("entities a string", lambda a: a.update(entities=MARKER))
    shape("mention without mentioned", lambda a: a.update(entities=[{"type": "mention", "text": MARKER}]))
    shape("bad timestamp", lambda a: a.update(timestamp=MARKER))
    shape("id a number", lambda a: a.update(id=5))
    shape("install with a bad action", lambda a: a.update(action={"x": MARKER}), installation_update(url))
    shape("members added a string", lambda a: a.update(type="conversationUpdate", membersAdded=MARKER))
    shape("invoke: extension value a string", lambda a: a.update(value=MARKER), extension_query(url, MARKER))
    shape("invoke: extension parameters a string", lambda a: a["value"].update(parameters=MARKER),
          extension_query(url, MARKER))
    shape("invoke: feedback action a string", lambda a: a["value"].update(actionValue=MARKER),
          feedback_invoke(url, reaction="like", reply_to_id="1"))
    shape("invoke: feedback without value", lambda a: a.pop("value"),
          feedback_invoke(url, reaction="like", reply_to_id="1"))
    shape("invoke: unknown name", lambda a: None, invoke_activity(url, MARKER, {"x": MARKER}))
    shape("invoke: no name", lambda a: a.pop("name"), invoke_activity(url, "composeExtension/query", {"x": MARKER}))
    return shapes


async def test_malformed_activities_get_400_and_one_line_without_their_content(make_bot, connector, caplog):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="microsoft_teams")  # the SDK never even sees them
    teams = await make_bot()
    shapes = _malformed(connector.service_url)
    for name, activity in shapes.items():
        caplog.clear()
        status, body = await teams.post(activity)
        await teams.bot.drain()
        assert status == 400, (name, status, body)
        assert body == {"error": "malformed activity"}
        records = caplog.records
        [line] = [r for r in records if r.levelno >= logging.WARNING]
        assert line.name == "askdesk.teams" and "malformed activity" in line.getMessage(), name
        assert not any(r.exc_info or r.exc_text or r.stack_info for r in records), name
        assert MARKER not in caplog.text and "input_value" not in caplog.text and "Traceback" not in caplog.text, name
        if isinstance(activity.get("id"), str):
            assert activity["id"] in line.getMessage()  # which activity: its id
    assert connector.calls == []


async def test_malformed_activity_line_names_the_failing_field(make_bot, connector, caplog):
    caplog.set_level(logging.DEBUG)
    teams = await make_bot()
    activity = _message(connector.service_url)
    activity["text"] = {"nested": MARKER}
    status, _ = await teams.post(activity)
    assert status == 400
    [line] = [r.getMessage() for r in caplog.records if "malformed" in r.getMessage()]
    assert line == f"teams: malformed activity {activity['id']} rejected: message.text: string_type"
    status, _ = await teams.post(extension_query(connector.service_url, "x") | {"value": "y"})
    assert status == 400
    assert "invoke.composeExtension/query.value: model_type" in caplog.text


async def test_odd_but_valid_activities_and_oversized_bodies_answer_without_errors(make_bot, connector, llm,
                                                                                   caplog):
    caplog.set_level(logging.DEBUG)
    llm.script(AGENT, final("Families qualify [1].", KB_DOC))
    teams = await make_bot()
    odd = _message(connector.service_url)
    odd["entities"] = [{"type": MARKER, MARKER: MARKER}]
    odd["attachments"] = [{"contentType": MARKER, "content": {MARKER: MARKER}}]
    status, _ = await teams.post(odd)
    assert status == 200  # the SDK can parse it: answered as usual
    oversized = _message(connector.service_url)
    oversized["text"] = MARKER * 400_000  # over the listener's 4 MiB body limit
    async with teams.http.post(teams.url, json=oversized) as response:
        assert response.status == 413
    async with teams.http.post(teams.url, data=b"{not json " + MARKER.encode()) as response:
        assert response.status == 400
    await teams.bot.drain()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert MARKER not in caplog.text
    [answer] = connector.sent_messages(odd["conversation"]["id"])  # the odd message was answered
    assert answer["text"].startswith("Families qualify")


# --- an unreachable Bot Connector -----------------------------------------------------------------


def closed_port() -> int:
    """A local port nothing listens on: connections to it are refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.mark.parametrize("where", ["personal chat (streamed)", "channel (posted)", "registry command (card)"])
async def test_unreachable_connector_is_one_warning_per_answer(make_bot, connector, llm, caplog, where):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="microsoft_teams")
    caplog.set_level(logging.DEBUG, logger="asyncio")
    llm.check_complete = False  # the card needs no model
    llm.script(AGENT, final("Families qualify [1].", KB_DOC), final("Still qualify [1].", KB_DOC))
    teams = await make_bot()
    caplog.clear()  # the SDK's start-up warning (dev mode)
    service_url = f"http://127.0.0.1:{closed_port()}/"
    if where.startswith("channel"):
        conversation, mention = channel_conversation("1800000000903"), True
    else:
        conversation, mention = personal_conversation("29:user-down"), False
    question = "facility infant care near 78702" if where.startswith("registry") else "who is eligible?"

    started = time.monotonic()
    for n in (1, 2):  # two answers: one line each
        activity = message_activity(service_url, question, conversation=conversation, user="29:user-down",
                                    mention=mention)
        status, _ = await teams.post(activity)
        assert status == 200
        await teams.bot.drain(timeout=30)
    elapsed = time.monotonic() - started
    gc.collect()  # an unretrieved task exception is reported when its task is collected
    await asyncio.sleep(0.1)

    records = caplog.records
    warnings = [r for r in records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, [(r.name, r.levelname, r.getMessage()) for r in warnings]
    assert all(r.name == "askdesk.teams" and r.levelno == logging.WARNING for r in warnings)
    assert all("Bot Connector is unreachable (ConnectError)" in r.getMessage() for r in warnings)
    assert not any(r.exc_info or r.exc_text or r.stack_info for r in records)
    # no "Task exception was never retrieved" (its text is withheld by agent/log_privacy.py: look for the record)
    assert not [r for r in records if r.name == "asyncio" and r.levelno >= logging.WARNING]
    assert "never retrieved" not in caplog.text and "Traceback" not in caplog.text
    assert elapsed < 8, elapsed  # no retrying for seconds, no waiting for a first stream chunk
    assert connector.calls == []
