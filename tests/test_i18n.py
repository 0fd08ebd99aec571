"""Every fixed sentence in the asker's language (issue 34): translations in prompts/i18n/, the
turn's language from the message (or its thread), and each surface's notes, headings and buttons
in it; the refusal built from the documents' own titles in that language; a configured
capabilities phrase checked at start-up.

End to end offline: the real Askdesk over a small knowledge base with English, Spanish and
Vietnamese documents (search-only: no model), the terminal chat, and the real Slack and Teams
bots against the recording fakes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agent.answers import AskRequest
from agent.config import Settings
from agent.knowledge.language import message_language, turn_language
from agent.prompts import ENGLISH, LANGUAGE, PromptError, default_prompts, load_prompts, speaking
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk
from agent.understanding.identity import CapabilitiesError, check_capabilities
from agent.yamlio import safe_load
from tests.conftest import seed_embeddings
from tests.fakes.slack_api import BOT_ID, BOT_USER_ID, FakeSlackAPI, SlackHarness
from tests.fakes.teams_connector import FakeTeamsConnector, TeamsHarness, personal_conversation

REPO = Path(__file__).resolve().parent.parent
KB = REPO / "examples" / "city-permits" / "kb"
FILES = ["short-term-rentals.md", "tree-removal.md", "alquileres-de-corto-plazo-es.md",
         "huong-dan-giay-phep-kinh-doanh-vi.md"]
SHIPPED = ("en", "es", "vi")  # the languages askdesk ships fixed sentences in

ES_QUESTION = "¿Necesito una licencia para alquilar mi casa en Airbnb?"
VI_QUESTION = "Tôi có cần giấy phép kinh doanh cho tiệm nail không?"
ES_OFFTOPIC = "Escríbeme un poema sobre mi gato"
VI_OFFTOPIC = "Viết cho tôi một bài thơ về con mèo"
ES_TITLE = "Alquileres de corto plazo y licencias de negocio: guía en español"
VI_TITLE = "Hướng dẫn giấy phép kinh doanh và bảng hiệu (tiếng Việt)"


def said(name: str, lang: str, **values) -> str:
    with speaking(lang):
        return default_prompts().render(name, **values)


# --- translations ---------------------------------------------------------------------------------


@pytest.mark.parametrize("lang", [lang for lang in SHIPPED if lang != ENGLISH])
def test_every_text_people_read_has_a_translation_in_each_shipped_language(lang):
    """Fails when a message is added to prompts/*.yaml without its es/vi text (or a model's
    prompt lacks `translate: false`)."""
    prompts = default_prompts()
    assert prompts.languages == SHIPPED
    assert prompts.untranslated(lang) == [], f"prompts/i18n/{lang}.yaml lacks these: translate them"


def test_a_missing_translation_is_reported_and_said_in_english(tmp_path):
    shutil.copytree(REPO / "prompts", tmp_path / "prompts", ignore=shutil.ignore_patterns("__*"))
    es = tmp_path / "prompts" / "i18n" / "es.yaml"
    texts = safe_load(es.read_text(encoding="utf-8"))
    del texts["sources_heading"]
    es.write_text(yaml.safe_dump(texts, allow_unicode=True), encoding="utf-8")
    prompts = load_prompts(tmp_path / "prompts")
    assert prompts.untranslated("es") == ["sources_heading"]
    with speaking("es"):
        assert prompts.render("sources_heading") == "Sources"  # English, per message
        assert prompts.render("feedback_helpful") == "Útil"


@pytest.mark.parametrize("text, error", [
    ("refusal: 'Lo siento, solo ayudo con {{ capabilites }}.'", "uses capabilites and lacks capabilities, examples"),
    ("too_long: 'Su mensaje es demasiado largo.'", "lacks length, limit"),
    ("no_such_message: 'Hola'", "'no_such_message' is not a prompt"),
    ("last_step: 'Este es su último paso.'", "read by a model"),
])
def test_a_translation_that_does_not_fit_its_english_prompt_fails_at_load_naming_both(tmp_path, text, error):
    shutil.copytree(REPO / "prompts", tmp_path / "prompts", ignore=shutil.ignore_patterns("__*", "i18n"))
    (tmp_path / "prompts" / "i18n").mkdir()
    (tmp_path / "prompts" / "i18n" / "es.yaml").write_text(text + "\n", encoding="utf-8")
    with pytest.raises(PromptError) as caught:
        load_prompts(tmp_path / "prompts")
    assert "i18n/es.yaml" in str(caught.value) and error in str(caught.value)
    if "lacks" in error:
        assert "messages.yaml" in str(caught.value)  # the English prompt it must match


def test_a_prompts_dir_keeps_the_packaged_translations_of_the_texts_it_did_not_change(tmp_path):
    shutil.copytree(REPO / "prompts", tmp_path / "prompts", ignore=shutil.ignore_patterns("__*", "i18n"))
    messages = tmp_path / "prompts" / "messages.yaml"
    messages.write_text(messages.read_text(encoding="utf-8").replace(
        'template: "Here are the most relevant passages from the documents:"',
        'template: "From our handbook:"'), encoding="utf-8")
    prompts = load_prompts(tmp_path / "prompts")
    with speaking("vi"):
        assert prompts.render("search_only_header") == "From our handbook:"  # its own English, untranslated
        assert prompts.render("sources_heading") == "Nguồn"


def test_language_of_a_turn_comes_from_the_message_else_its_thread_else_english():
    assert message_language(ES_QUESTION) == "es" and message_language(VI_QUESTION) == "vi"
    assert message_language("What does a permit cost?") == "en"
    assert message_language("DS-160?") is None and message_language("ok") is None
    assert message_language("lam sao de xin giay phep xay nha") == "vi"  # Vietnamese typed without its marks
    assert message_language("cách làm bánh mì ngon") == "vi"  # marks Spanish never writes
    assert message_language("Nguyễn asked what the leave policy is") == "en"
    assert turn_language("DS-160?", [ES_QUESTION]) == "es"  # a short follow-up keeps the thread's
    assert turn_language("DS-160?", [ES_QUESTION, VI_QUESTION]) == "vi"  # ...the latest clear one
    assert turn_language("and the fee?", [ES_QUESTION]) == "en"  # a clear switch is followed
    assert turn_language("DS-160?") == "en"
    with speaking("es"):
        assert LANGUAGE.get() == "es"
    assert LANGUAGE.get() == ENGLISH


# --- configured capabilities ------------------------------------------------------------------


@pytest.mark.parametrize("value, why", [
    ("answer nursing and ward staff questions…", "starts with 'answer'"),
    ("pay, leave and ward procedures.", "ends with '.'"),
    ("Pay and leave. Also rosters and the canteen", "more than one sentence"),
    ("We help with HR", "starts with 'We'"),
    ("pay " * 60, "characters long"),
])
def test_a_capabilities_setting_that_is_not_a_noun_phrase_fails_start_up(tmp_path, value, why):
    settings = Settings(data_dir=tmp_path / "data", assistant_capabilities=value, agent_model=None, router_model=None)
    with pytest.raises(CapabilitiesError) as caught:
        Askdesk(settings, runtime=None, state=MemoryState())  # type: ignore[arg-type]
    assert "ASKDESK_ASSISTANT_CAPABILITIES must be a noun phrase" in str(caught.value) and why in str(caught.value)


def test_a_spanish_capabilities_setting_is_checked_with_its_own_variable_name(tmp_path):
    settings = Settings(data_dir=tmp_path / "data", assistant_capabilities="pay and leave",
                        assistant_capabilities_es="responder preguntas de nómina", agent_model=None, router_model=None)
    with pytest.raises(CapabilitiesError, match="ASKDESK_ASSISTANT_CAPABILITIES_ES .* starts with 'responder'"):
        Askdesk(settings, runtime=None, state=MemoryState())  # type: ignore[arg-type]
    assert check_capabilities("pay, leave and ward procedures") == "pay, leave and ward procedures"
    assert check_capabilities("help desk tickets and laptops") == "help desk tickets and laptops"


# --- end to end ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
async def kb_runtime(tmp_path_factory):
    """English, Spanish and Vietnamese permit guides, ingested once for this module."""
    from agent.knowledge.ingest import ingest

    root = tmp_path_factory.mktemp("i18n-kb")
    settings = Settings(data_dir=root / "data")
    settings.data_dir.mkdir(parents=True)
    seed_embeddings(settings.data_dir)
    runtime = Runtime.open(settings)
    report = await ingest(runtime, [KB / name for name in FILES])
    assert set(report.languages) == {"en", "es", "vi"} and report.languages_note is None
    yield runtime
    await runtime.close()


def search_only_settings(tmp_path, **overrides) -> Settings:
    return Settings(**({"data_dir": tmp_path / "data", "agent_model": None, "router_model": None} | overrides))


async def test_search_only_answers_and_refusals_are_in_the_askers_language(kb_runtime, tmp_path):
    service = Askdesk(search_only_settings(tmp_path), kb_runtime, state=MemoryState())
    try:
        lines: list[str] = []

        async def progress(line: str) -> None:
            lines.append(line)

        es = await service.answer(AskRequest(text=ES_QUESTION, thread_id="es"), progress)
        assert es.language == "es" and es.route == "knowledge"
        assert lines == ["Buscando en la base de conocimientos…"]  # the tool's progress line too
        assert es.answer.startswith(said("search_only_header", "es")) and "pasajes" in es.answer
        assert es.notice is not None and es.notice.startswith("No hay ningún modelo de lenguaje configurado")
        follow_up = await service.answer(AskRequest(text="DS-160?", thread_id="es"))  # short: the thread's language
        assert follow_up.language == "es" and follow_up.answer.startswith(said("search_only_header", "es"))

        vi = await service.answer(AskRequest(text=VI_QUESTION, thread_id="vi"))
        assert vi.language == "vi" and vi.answer.startswith("Đây là những đoạn liên quan nhất trong tài liệu:")
        assert vi.notice is not None and vi.notice.startswith("Chưa cấu hình mô hình ngôn ngữ")

        en = await service.answer(AskRequest(text="Do I need a license for a short-term rental?", thread_id="en"),
                                  progress)
        assert lines[-1] == "Searching the knowledge base…"
        assert en.language == "en" and en.answer.startswith("Here are the most relevant passages")

        # off topic: the refusal in the asker's language, naming the documents written in it
        refused = await service.answer(AskRequest(text=ES_OFFTOPIC, thread_id="es2"))
        assert refused.route == "offtopic" and refused.language == "es"
        assert refused.answer.startswith("Lo siento, solo puedo ayudar con preguntas sobre los documentos de la "
                                         f"organización, como “{ES_TITLE}”")
        # loaded by a Spanish turn, the models' words and the suggested questions stay English
        assert service.identity.get(None).domain.startswith("the organisation's documents, such as “")
        assert all(q.startswith("What does “") for q in service.identity.get(None).prompts)
        refused = await service.answer(AskRequest(text=VI_OFFTOPIC, thread_id="vi2"))
        assert refused.route == "offtopic" and refused.language == "vi"
        assert refused.answer.startswith(f"Xin lỗi, tôi chỉ có thể giúp các câu hỏi về tài liệu của tổ chức, chẳng hạn “{VI_TITLE}”")
        refused = await service.answer(AskRequest(text="Write me a poem about my cat", thread_id="en2"))
        assert refused.answer.startswith("Sorry, I can only help with questions about the organisation's documents")
        assert "guía en español" not in refused.answer  # English askers are told of the English documents

        empty = await service.answer(AskRequest(text="", thread_id="es"))  # nothing to tell: the thread's language
        assert empty.answer == said("empty_message", "es")
    finally:
        await service.close()


async def test_configured_capabilities_are_said_per_language(kb_runtime, tmp_path):
    settings = search_only_settings(tmp_path, assistant_capabilities="permits, licences and inspections",
                                    assistant_capabilities_vi="giấy phép, đăng ký kinh doanh và kiểm tra")
    service = Askdesk(settings, kb_runtime, state=MemoryState())
    try:
        en = await service.answer(AskRequest(text="Write me a poem about my cat", thread_id="a"))
        assert en.answer.startswith("Sorry, I can only help with questions about permits, licences and inspections.")
        vi = await service.answer(AskRequest(text=VI_OFFTOPIC, thread_id="b"))
        assert vi.answer.startswith("Xin lỗi, tôi chỉ có thể giúp các câu hỏi về giấy phép, đăng ký kinh doanh và kiểm tra.")
        es = await service.answer(AskRequest(text=ES_OFFTOPIC, thread_id="c"))  # no _ES: the Spanish documents
        assert f"como “{ES_TITLE}”" in es.answer and "permits" not in es.answer
    finally:
        await service.close()


async def test_terminal_chat_says_lead_in_sources_and_hint_in_the_askers_language(kb_runtime, tmp_path, capsys):
    from bot.commands.chat import _chat_loop

    settings = search_only_settings(tmp_path)
    service = Askdesk(settings, kb_runtime, state=MemoryState())
    try:
        await _chat_loop(settings, "cli-es", questions=[ES_QUESTION, VI_QUESTION, VI_OFFTOPIC], service=service)
    finally:
        await service.close()
    out = " ".join(capsys.readouterr().out.split())
    assert said("search_only_header", "es") in out and "Fuentes" in out
    assert said("search_only_header", "vi") in out and "Nguồn" in out
    assert "Xin lỗi, tôi chỉ có thể giúp" in out and said("search_anyway_terminal", "vi") in out
    assert "Sources" not in out and "Search the documents anyway" not in out


@pytest.fixture
async def fake_slack():
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


async def test_slack_lead_in_notice_sources_and_buttons_in_the_askers_language(kb_runtime, fake_slack, tmp_path):
    settings = search_only_settings(tmp_path)
    askdesk = Askdesk.create(settings, runtime=kb_runtime)
    slack = await SlackHarness.start(fake_slack, settings, askdesk, kb_runtime)
    try:
        await slack.mention(ES_QUESTION, ts="1700009000.000100")
        await slack.mention(VI_QUESTION, ts="1700009100.000100")
        await slack.mention(VI_OFFTOPIC, ts="1700009200.000100")
        # a follow-up that says no language of its own ("DS-160?") is answered in the thread's
        thread = fake_slack.add_thread("C0001", [{"ts": "1700009250.000100", "user": "U0001",
                                                  "text": f"<@{BOT_USER_ID}> {ES_QUESTION}"}])
        await slack.mention(ES_QUESTION, ts=thread)
        await slack.bot.drain()
        await slack.mention("DS-160?", ts="1700009250.000300", thread_ts=thread)
        await slack.bot.drain()
    finally:
        await slack.close()
        await askdesk.close()

    def message(ts: str) -> str:
        [found] = [m for m in fake_slack.threads.get(("C0001", ts), []) if m.get("bot_id") == BOT_ID]
        return json.dumps(found, ensure_ascii=False)

    es = message("1700009000.000100")
    for text in ("Estos son los pasajes más relevantes", "Fuentes", "No hay ningún modelo de lenguaje", "Útil",
                 "No útil"):
        assert text in es, text
    assert "Sources" not in es and "Helpful" not in es
    vi = message("1700009100.000100")
    for text in ("Đây là những đoạn liên quan nhất", "Nguồn", "Hữu ích", "Không hữu ích"):
        assert text in vi, text
    follow_up = json.dumps([m for m in fake_slack.threads[("C0001", thread)] if m.get("bot_id") == BOT_ID][-1],
                           ensure_ascii=False)
    for text in ("Estos son los pasajes más relevantes", "Fuentes", "Útil"):
        assert text in follow_up, text
    refusal = message("1700009200.000100")
    assert "Xin lỗi, tôi chỉ có thể giúp" in refusal and "Vẫn tìm trong tài liệu" in refusal
    assert "Search the documents anyway" not in refusal


@pytest.fixture
async def connector():
    fake = await FakeTeamsConnector().start()
    yield fake
    await fake.stop()


async def test_teams_lead_in_notice_sources_and_buttons_in_the_askers_language(kb_runtime, connector, tmp_path):
    settings = search_only_settings(tmp_path)
    askdesk = Askdesk.create(settings, runtime=kb_runtime)
    teams = await TeamsHarness.start(connector, settings, askdesk, kb_runtime)
    try:
        es_chat, vi_chat = personal_conversation("29:user-es"), personal_conversation("29:user-vi")
        await teams.say(ES_QUESTION, conversation=es_chat, user="29:user-es")
        await teams.bot.drain()
        await teams.say(VI_QUESTION, conversation=vi_chat, user="29:user-vi")
        await teams.bot.drain()
        await teams.say(ES_OFFTOPIC, conversation=es_chat, user="29:user-es")
        await teams.bot.drain()
        es_answer, es_refusal = (json.dumps(m, ensure_ascii=False) for m in connector.sent_messages(es_chat["id"]))
        [vi_answer] = (json.dumps(m, ensure_ascii=False) for m in connector.sent_messages(vi_chat["id"]))
    finally:
        await teams.close()
        await askdesk.close()
    for text in ("Estos son los pasajes más relevantes", "No hay ningún modelo de lenguaje"):
        assert text in es_answer, text
    assert "Here are the most relevant" not in es_answer and "No LLM configured" not in es_answer
    assert "Đây là những đoạn liên quan nhất" in vi_answer and "Chưa cấu hình mô hình ngôn ngữ" in vi_answer
    assert "Lo siento, solo puedo ayudar" in es_refusal and "Buscar en los documentos de todos modos" in es_refusal


async def test_slack_note_before_a_turn_is_in_the_messages_language(kb_runtime, fake_slack, tmp_path):
    """A mention in a channel outside the allowlist: the private note in the message's language."""
    settings = search_only_settings(tmp_path, slack_channels=["C0999"])
    askdesk = Askdesk.create(settings, runtime=kb_runtime)
    slack = await SlackHarness.start(fake_slack, settings, askdesk, kb_runtime)
    try:
        await slack.mention(ES_QUESTION, ts="1700009300.000100")
        await slack.bot.drain()
    finally:
        await slack.close()
        await askdesk.close()
    [note] = fake_slack.calls_to("chat.postEphemeral")
    assert note.args["text"] == said("channel_not_enabled", "es")


def test_askdesk_says_a_bad_capabilities_setting_in_one_line_and_exits(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {"ASKDESK_DATA_DIR": str(tmp_path / "data"),
            "ASKDESK_ASSISTANT_CAPABILITIES": "answer nursing and ward staff questions…"}
    run = subprocess.run([sys.executable, "-c", "from bot.cli import main; main()", "ask", "hola"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert run.returncode == 1 and "Traceback" not in run.stderr
    assert run.stderr.strip().splitlines() == [
        "error: ASKDESK_ASSISTANT_CAPABILITIES must be a noun phrase that completes “I can only help with questions "
        "about …”, such as “pay, leave and ward procedures”; it starts with 'answer', not with what the questions "
        "are about: 'answer nursing and ward staff questions…'"]


async def test_documents_in_a_language_without_translations_are_noted_by_ingest_and_sources(kb_runtime, tmp_path):
    from agent.knowledge import kb_languages
    from agent.knowledge.ingest import IngestReport
    from bot.admin.jobs import ingest_output

    shutil.copytree(REPO / "prompts", tmp_path / "prompts", ignore=shutil.ignore_patterns("__*", "vi.yaml"))
    settings = kb_runtime.settings.model_copy(update={"prompts_dir": tmp_path / "prompts"})
    held = kb_languages.held(settings)
    assert set(held) == {"en", "es", "vi"} and kb_languages.spoken(settings) == ("en", "es")
    note = kb_languages.note(held, kb_languages.spoken(settings))
    assert note is not None and "documents in vi have no askdesk translations" in note
    assert kb_languages.note(held, kb_languages.spoken(kb_runtime.settings)) is None  # shipped: all spoken

    printed = ingest_output(IngestReport(collection="kb", files=1, languages=held, languages_note=note), as_json=False)
    assert printed.stdout[-1] == note and printed.code == 0  # a note, not an error

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env |= {"ASKDESK_DATA_DIR": str(settings.data_dir), "ASKDESK_PROMPTS_DIR": str(tmp_path / "prompts")}
    run = subprocess.run([sys.executable, "-c", "from bot.cli import main; main()", "sources"], env=env,
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert run.returncode == 0 and note in run.stdout.splitlines()


async def test_teams_rate_limit_and_too_long_notes_are_in_the_messages_language(kb_runtime, connector, tmp_path):
    settings = search_only_settings(tmp_path, rate_limit_per_minute=1, max_message_chars=60)
    askdesk = Askdesk.create(settings, runtime=kb_runtime)
    teams = await TeamsHarness.start(connector, settings, askdesk, kb_runtime)
    chat = personal_conversation("29:user-rl")
    try:
        await teams.say(VI_QUESTION + " " + VI_QUESTION, conversation=chat, user="29:user-rl")  # over 60 characters
        await teams.bot.drain()
        too_long = connector.sent_messages(chat["id"])[-1]["text"]
        await teams.say(ES_OFFTOPIC, conversation=chat, user="29:user-rl")
        await teams.bot.drain()
        await teams.say("¿Y cuánto cuesta la licencia?", conversation=chat, user="29:user-rl")
        await teams.bot.drain()
        limited = connector.sent_messages(chat["id"])[-1]["text"]
    finally:
        await teams.close()
        await askdesk.close()
    assert too_long.startswith("Tin nhắn của bạn dài ") and "tối đa 60 ký tự" in too_long
    assert limited.startswith("Está preguntando más rápido de lo que puedo atender")
