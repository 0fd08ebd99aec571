"""Nothing sensitive in logs (issue 12): a full fault run — every model misbehaving in turn,
then answering — with a marker in the question and in the models' output; every record of
every logger at every level (tracebacks included) is scanned for the marker and the keys.
Before: openai/groq logged each request (the question) at DEBUG and instructor its
validation errors (quoting the model's output) at ERROR."""

from __future__ import annotations

import logging

import pytest

from agent.config import Settings
from agent.state.memory import MemoryState
from agent.runtime import Runtime
from agent.turn.service import Askdesk, AskRequest
from tests.fakes.llm_server import Raw, fault

MARKER = "ZQX-7431-private"
QUESTION = f"What is the maximum income for a family of 4 to be eligible for child care? my case id is {MARKER}"
ECHO = {"step": {"kind": "final_answer", "answer": f"For case {MARKER}: see the income chart.", "references": [],
                 "confidence": 0.9}}


@pytest.fixture
def all_logs(caplog):
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        logger = logging.getLogger(name)
        if logger.level > logging.DEBUG:
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


async def test_a_fault_run_logs_no_message_text_and_no_keys(kb_settings, llm_server, all_logs, tmp_path):
    llm_server.check_complete = False  # how many router calls a turn makes is the router's business
    echo_raw = Raw(f'{{"unexpected": "{MARKER}"}}')
    llm_server.script("openai", echo_raw, Raw(f"not json, but it quotes {MARKER}"), fault("empty_choices"),
                      fault("500"), fault("500"), fault("401"))
    llm_server.script("gemini", echo_raw, echo_raw, fault("429"), fault("non_json"), fault("schema_invalid"))
    llm_server.script("groq", fault("500"), echo_raw, fault("empty_choices"))
    for provider in ("openai", "gemini", "groq"):
        llm_server.script_default(provider, ECHO)

    settings = Settings(data_dir=tmp_path / "svc", agent_model="openai/gpt-4.1-mini",
                        router_model="groq/llama-3.1-8b-instant", fallback_models=["gemini/gemini-2.5-flash"],
                        llm_max_retries=1)
    runtime = Runtime.open(kb_settings)
    service = Askdesk(settings, runtime, state=MemoryState())
    try:
        answers = [await service.answer(AskRequest(text=QUESTION, thread_id=f"t{i}")) for i in range(4)]
    finally:
        await service.close()
        await runtime.close()

    assert any(MARKER in r.text for r in llm_server.requests)  # the marker did reach the models
    assert any(MARKER in a.answer for a in answers)  # and came back in an answer
    names = {r.name.split(".")[0] for r in all_logs.records}
    assert {"instructor", "askdesk"} <= names, names  # the faults were logged, by us and by libraries
    text = all_logs.text + "\n".join(r.getMessage() for r in all_logs.records)
    for secret in (MARKER, "test-openai-key", "test-groq-key", "test-gemini-key"):
        assert secret not in text, [r.name for r in all_logs.records if secret in r.getMessage()]


@pytest.fixture
def root_at_debug():
    """Logging configured the way an operator turns it all the way up: a formatter that prints
    tracebacks, on the root logger at DEBUG. Yields the text it wrote."""
    import io

    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield stream
    finally:
        root.removeHandler(handler)
        root.setLevel(old_level)


async def test_at_root_debug_no_library_logs_text_or_a_traceback(kb_settings, llm_server, root_at_debug, tmp_path):
    """A turn whose conversation is stored in SQLite (aiosqlite logs every statement with its
    parameters at DEBUG), provider calls with faults, an ingest of a document holding the marker,
    a library nobody listed logging it with a traceback, and askdesk's own logger logging an
    exception that quotes it: the marker appears nowhere in the output, nor does a traceback.
    Then every logger is forced to DEBUG, and the same holds."""
    from agent.knowledge.ingest import ingest
    from agent.state.sqlite import SQLiteState
    from tests.crash_child import EMBEDDER, HashEmbedder

    llm_server.check_complete = False
    llm_server.script("openai", fault("500"), Raw(f'{{"unexpected": "{MARKER}"}}'))
    llm_server.script_default("openai", ECHO)
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "case.md").write_text(f"# Case notes\n\nThe case {MARKER} was reviewed on Monday.\n", encoding="utf-8")

    async def run(thread: str) -> list:
        docs = Runtime.open(Settings(data_dir=tmp_path / f"docs-{thread}", embedder=EMBEDDER))
        docs._embedders[EMBEDDER] = HashEmbedder()
        try:
            await ingest(docs, [kb])
        finally:
            await docs.close()
        settings = Settings(data_dir=tmp_path / "svc", agent_model="openai/gpt-4.1-mini", router_model=None,
                            llm_max_retries=1)
        runtime = Runtime.open(kb_settings)
        service = Askdesk(settings, runtime, state=SQLiteState(tmp_path / "svc" / "askdesk.sqlite"))
        try:
            answers = [await service.answer(AskRequest(text=QUESTION, thread_id=thread))]
        finally:
            await service.close()
            await runtime.close()
        try:
            raise ValueError(f"payload quoting {MARKER}")
        except ValueError:
            logging.getLogger("somelib.client").exception("request failed: %s", MARKER)
            logging.getLogger("askdesk.test").exception("could not do the thing")
        return answers

    answers = await run("t1")
    first = root_at_debug.getvalue()
    levels = {name: logging.getLogger(name).level for name in list(logging.root.manager.loggerDict)}
    for name in levels:  # the application lowers every level
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        answers += await run("t2")
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
    text = root_at_debug.getvalue()

    assert any(MARKER in r.text for r in llm_server.requests) and all(MARKER in a.answer for a in answers)
    assert MARKER not in text and "test-openai-key" not in text
    assert "Traceback" not in text and 'File "' not in text
    assert "aiosqlite" not in first  # held below DEBUG while the application leaves its level alone
    assert "aiosqlite record withheld" in text  # and withheld when the application lowers it
    assert "somelib.client record withheld: it may quote messages or keys] (ValueError at" in text
    assert "askdesk.test: could not do the thing (ValueError at test_log_privacy.py:" in text
