"""The last fixed sentences people read are said in their language (issue 34): a registry's own
notes in a registry search (the real service over the demo registry), the admins' knowledge-gap
report (Slack's App Home through the fake Slack API, Teams' `report` card through the fake Bot
Connector), and the note on a Slack stream a stopped process left open (said in the language its
answer spoke, recorded with the stream). Expected sentences are rendered from the prompt set and
checked to differ from English; a guard keeps new English prose out of the code that replies.
"""

from __future__ import annotations

import ast
import json
import re
import sqlite3
from pathlib import Path

import pytest

from agent.config import Settings
from agent.prompts import ENGLISH, PromptSet, speaking
from agent.runtime import Runtime
from agent.turn.service import Askdesk, AskRequest
from bot.slack.escape import safe_markdown
from bot.slack.plugin import close_streams_left_open
from bot.slack.reply import STREAMS
from tests.conftest import REPO
from tests.fakes.slack_api import FakeSlackAPI, SlackHarness
from tests.fakes.teams_connector import FakeTeamsConnector, TeamsHarness, personal_conversation
from tests.knowledge_fixtures import ingest_demo_registry, service_on
from tests.registry_corpus import TOKEN_HASH, TokenHashEmbedder
from tests.test_slack_bot import AGENT, KB_DOC, fake_slack, final, llm, make_bot  # noqa: F401

RECORD = "facility"  # the demo declaration's noun (examples/texas-childcare/registries/facility.yaml)
ZIP_NOUN = "zip code"  # its zip field's noun


def said(prompts: PromptSet, name: str, lang: str, **values) -> str:
    """`name` in `lang`, checked to differ from its English (a translation the test can tell apart)."""
    text = prompts.get(name, lang).render(**values)
    assert lang == ENGLISH or text != prompts.get(name, ENGLISH).render(**values), f"{name} is not translated"
    return text


# --- a registry's notes, in a turn of the real service ----------------------------------------------

NAMED = {  # a name no facility has: the closest by meaning, said so
    "es": ('guarderías "Zorblax Quuxington" en Texas', "zorblax quuxington"),
    "vi": ("nhà trẻ gần Zorblaxville", "zorblaxville"),
    "en": ('child care "Zorblax Quuxington" in Texas', "zorblax quuxington"),
}
UNKNOWN_ZIP = {"es": "guarderías en 75999", "vi": "nhà trẻ ở 75999", "en": "child care in zip code 75999"}


@pytest.fixture(scope="module")
async def registry_service(tmp_path_factory):
    """The service over the demo registry, embedded with the deterministic token-hash embedder
    and no language model: a registry turn answers with its search results (search-only)."""
    settings = Settings(data_dir=tmp_path_factory.mktemp("fixed-sentences") / "data", embedder=TOKEN_HASH,
                        embedding_cache=False)
    runtime = Runtime.open(settings)
    runtime._embedders[TOKEN_HASH] = TokenHashEmbedder()  # type: ignore[assignment]
    await ingest_demo_registry(runtime)
    async with service_on(runtime) as service:
        yield service
    await runtime.close()


@pytest.mark.parametrize("lang", ["es", "vi", "en"])
async def test_a_registry_search_says_its_notes_in_the_askers_language(registry_service, lang):
    prompts = registry_service.prompts
    text, query = NAMED[lang]
    result = await registry_service.answer(AskRequest(text=text))
    assert (result.route, result.language, result.search_only) == ("facility", lang, True)
    with speaking(lang):
        summary = prompts.render("registry_matching", query=query)  # how the search was understood
    first, note = result.answer.splitlines()[:2]
    assert first == said(prompts, "registry_search_summary", lang, record=RECORD, summary=summary, total=5, shown=5)
    assert note == said(prompts, "registry_closest", lang, record=RECORD, query=query)

    unknown = await registry_service.answer(AskRequest(text=UNKNOWN_ZIP[lang]))
    assert (unknown.route, unknown.language) == ("facility", lang)
    assert unknown.answer.strip() == said(prompts, "registry_unknown_code", lang, noun=ZIP_NOUN, code="75999")


async def test_english_registry_notes_are_unchanged(registry_service):
    """The English sentences, as they were written in the code before they became messages."""
    result = await registry_service.answer(AskRequest(text=NAMED["en"][0]))
    assert result.answer.splitlines()[:2] == [
        'Facility search (matching "zorblax quuxington"): 5 match(es), showing 5.',
        "No facility name or description contains 'zorblax quuxington'; these are the closest by meaning."]
    near = await registry_service.answer(AskRequest(text="child care near Zorblaxville"))
    assert near.answer.strip() == ("I don't know where 'zorblaxville' is. Try a zip code, a city or county name, "
                                   "or 'lat,lon'.")


# --- the admins' report ---------------------------------------------------------------------------------

ADMINS = "UESADMIN, UENADMIN, 29:vi-admin"


@pytest.fixture
async def admin_service(kb_runtime, tmp_path):
    """A service whose state store has no question yet: the report has no gap question."""
    askdesk = Askdesk.create(Settings(data_dir=tmp_path / "data", admins=ADMINS, store_text=True), runtime=kb_runtime)
    yield askdesk
    await askdesk.close()


def home_texts(view: dict) -> list[str]:
    texts = [b["text"]["text"] for b in view["blocks"] if "text" in b]
    return texts + [e["text"] for b in view["blocks"] for e in b.get("elements", []) if "text" in e]


async def test_the_app_home_report_is_in_the_admins_slack_language(admin_service):
    fake = await FakeSlackAPI().start()
    fake.locales["UESADMIN"] = "es-LA"  # UENADMIN: Slack's default, en-US
    harness = await SlackHarness.start(fake, admin_service.settings, admin_service)
    try:
        for n, user in enumerate(("UESADMIN", "UENADMIN")):
            event = {"type": "app_home_opened", "user": user, "channel": f"D{user}", "tab": "home",
                     "event_ts": f"170000090{n}.000100"}
            assert await harness.send_event(event) == 200
        await harness.bot.drain()
    finally:
        await harness.close()
        await fake.stop()
    views = {c.args["user_id"]: c.args["view"] for c in fake.calls_to("views.publish")}
    views = {user: v if isinstance(v, dict) else json.loads(v) for user, v in views.items()}
    prompts = admin_service.prompts
    spanish, english = home_texts(views["UESADMIN"]), home_texts(views["UENADMIN"])
    assert spanish[0] == said(prompts, "report_title", "es")
    assert any(t.endswith("\n" + said(prompts, "report_none", "es")) for t in spanish)
    assert english[0] == "Knowledge-gap report"
    assert any(t == "*Unanswered and down-voted questions, grouped by meaning*\nNone in this period." for t in english)
    assert all(c.args.get("include_locale") for c in fake.calls_to("users.info"))


async def test_the_teams_report_card_is_in_the_activitys_locale(admin_service):
    connector = await FakeTeamsConnector().start()
    harness = await TeamsHarness.start(connector, admin_service.settings, admin_service)
    conversation = personal_conversation("29:vi-admin")
    try:
        await harness.say("report", conversation=conversation, user="29:vi-admin", locale="vi-VN")
        await harness.bot.drain()
    finally:
        await harness.close()
        await connector.stop()
    [message] = connector.sent_messages(conversation["id"])
    body = message["attachments"][0]["content"]["body"]
    texts = [b["text"] for b in body if b["type"] == "TextBlock"]
    prompts = admin_service.prompts
    assert texts[0] == said(prompts, "report_title", "vi")
    assert texts[-1] == said(prompts, "report_none", "vi")
    facts = [f["title"] for b in body if b["type"] == "FactSet" for f in b["facts"]]
    assert facts[0] == said(prompts, "report_questions", "vi")


# --- a stream a stopped process left open -------------------------------------------------------------

DEAD_PID = 2 ** 22 + 12345  # above the default pid_max: no such process


def stream_claims(data_dir: Path) -> list[str]:
    with sqlite3.connect(data_dir / "askdesk.sqlite") as db:
        return [key for (key,) in db.execute("SELECT key FROM claims WHERE key LIKE ?", (STREAMS + "%",))]


async def test_a_stream_left_open_is_closed_in_its_answers_language_after_a_restart(make_bot, fake_slack, tmp_path):
    slack = await make_bot()
    client = slack.bot.app.client
    assert await slack.bot.services.answering.streams.state.abandoned(STREAMS) == []  # the store, opened
    left: dict[str, str | None] = {}
    for n, lang in enumerate(("es", "vi", None)):  # None: a claim written before claims kept a language
        question_ts = f"170030000{n}.000100"
        started = await client.chat_startStream(channel="C0001", thread_ts=question_ts, markdown_text="…")
        left[started["ts"]] = lang
        key = f"{STREAMS}C0001:{question_ts}:{started['ts']}" + (f":{lang}" if lang else "")
        with sqlite3.connect(tmp_path / "data" / "askdesk.sqlite") as db:  # its holder died mid-answer
            db.execute("INSERT INTO claims VALUES (?, 7, ?, 0, 1e12)", (key, DEAD_PID))

    await close_streams_left_open(slack.bot)  # what `askdesk serve` does when it starts again

    prompts = slack.bot.services.askdesk.prompts
    closed = {c.args["ts"]: c.args["markdown_text"] for c in fake_slack.calls_to("chat.stopStream")}
    assert closed == {ts: safe_markdown(said(prompts, "shutdown_interrupted", lang or ENGLISH))
                      for ts, lang in left.items()}
    assert fake_slack.streams == {}


async def test_an_open_stream_is_recorded_with_its_answers_language_and_nothing_of_the_question(
        make_bot, fake_slack, llm, tmp_path):
    question = "¿Puede un abuelo recoger a mi hijo del centro de cuidado infantil?"
    llm.script(AGENT, final("Sí, con una autorización escrita [1].", KB_DOC))
    slack = await make_bot()
    await slack.mention(question, ts="1700310000.000100")
    await slack.bot.drain()
    [stopped] = fake_slack.calls_to("chat.stopStream")
    [key] = stream_claims(tmp_path / "data")
    assert key == f"{STREAMS}C0001:1700310000.000100:{stopped.args['ts']}:es"
    assert not set(re.findall(r"\w{4,}", question.lower())) & set(re.findall(r"\w{4,}", key.lower()))


# --- no English prose left in the code that replies ----------------------------------------------------

SINK_CALLS = {"note", "help", "section", "TextBlock", "send_note", "reply", "last_word"}  # called with what people read
SINK_TARGETS = {"message", "reply", "note"}  # assigned what people read
SINK_KEYWORDS = {"text", "reply", "message", "markdown_text", "note"}
WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# The web console's pages know no reader's language: they are English (docs/languages.md).
ENGLISH_ONLY = {"bot/console"}


def _literal(node: ast.AST | None) -> str:
    """The literal text of a string, an f-string (each value an X) or a sum of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(v.value if isinstance(v, ast.Constant) else "X" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        return _literal(node.left) + _literal(node.right)
    if isinstance(node, ast.IfExp):
        return max(_literal(node.body), _literal(node.orelse), key=len)
    return ""


def _name(node: ast.AST | None) -> str:
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""


def english_prose(source: str) -> list[str]:
    """Literals of four English words or more handed to what replies: a note, a reply, a card's
    TextBlock, a Block Kit section, a registry's notes or message."""
    found: list[ast.AST] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            called = _name(node.func)
            if called in SINK_CALLS or (called == "append" and _name(getattr(node.func, "value", None)) == "notes"):
                found += node.args
            found += [k.value for k in node.keywords if k.arg in SINK_KEYWORDS]
        elif isinstance(node, ast.Assign) and any(_name(t) in SINK_TARGETS for t in node.targets):
            found.append(node.value)
    return [text for text in map(_literal, found) if len(WORD.findall(text)) >= 4]


def test_the_guard_finds_english_prose_where_it_was():
    """The guard fails on the sentences this change moved into prompts/ (as they were written)."""
    before = '''
notes.append(f"No {self.decl.record.singular} matches all of: " + described + ".")
out.message = f"No {self.one} in the registry is in {place.name}. Try near='{place.name}' with a radius."
note = (f"No {one} name or description contains '{query}'; these are the closest by meaning.") if hits else None
reply = f"The {one} registry is unavailable right now ({exc}). Please try again later."
self.help(raw, f"I couldn't find {what} in '{raw}'.")
section("*Unanswered and down-voted questions, grouped by meaning*\\n" + ("\\n".join(gaps) or "None in this period."))
TextBlock(text="None in this period." if not report.gap_questions else " ", wrap=True)
await note(ctx, "The report is unavailable right now; try again later.")
'''
    assert len(english_prose(before)) == 8
    assert english_prose('notes.append(prompts.text("registry_no_match", record=one, criteria=c))') == []


def test_no_english_prose_is_handed_to_a_reply_in_the_registry_or_the_surfaces():
    files = sorted((REPO / "agent" / "registry").glob("*.py")) + sorted((REPO / "bot").rglob("*.py"))
    files = [f for f in files if not any(f.relative_to(REPO).as_posix().startswith(d + "/") for d in ENGLISH_ONLY)]
    assert len(files) > 50
    found = {f.relative_to(REPO).as_posix(): hits for f in files
             if (hits := english_prose(f.read_text(encoding="utf-8")))}
    assert found == {}, "fixed sentences belong in prompts/messages.yaml (+ prompts/i18n/), rendered where used"

