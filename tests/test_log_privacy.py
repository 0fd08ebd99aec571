"""Nothing sensitive in logs (issue 12): a full fault run — every model misbehaving in turn,
then answering — with a marker in the question and in the models' output; every record of
every logger at every level (tracebacks included) is scanned for the marker and the keys.
Before: openai/groq logged each request (the question) at DEBUG and instructor its
validation errors (quoting the model's output) at ERROR."""

from __future__ import annotations

import logging

import pytest

from agent.config import Settings
from agent.state.memory import MemoryConversationStore
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
    service = Askdesk(settings, runtime, store=MemoryConversationStore())
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
