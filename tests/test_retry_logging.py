"""One log line per retry (issue 31): a handled retry — a transport retry after a 5xx or 429,
or instructor's re-ask after output that does not fit — leaves exactly one WARNING line, from
askdesk (which model, attempt n of m, why, the wait), no ERROR record from any library and no
traceback. Every logger is captured at DEBUG. Before: each retry logged two ERROR lines from
instructor ("API call failed on attempt n", "Max retries exceeded"). Real SDKs against the
fake LLM server."""

from __future__ import annotations

import logging

import pytest

from agent.messages import ChatMessage
from agent.providers.chain import ModelChain
from agent.providers.models import ServiceModels
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk, AskRequest
from agent.turn.steps import AgentStep
from tests.fakes.llm_models import FINAL, Step
from tests.fakes.steps import final
from tests.knowledge_fixtures import SMALL_KB_DOC

MESSAGES = [ChatMessage(role="user", content="Who qualifies for child care aid?")]
SPEC = {"openai": "openai/gpt-4.1-mini", "groq": "groq/llama-3.3-70b-versatile", "gemini": "gemini/gemini-2.5-flash"}


@pytest.fixture
def all_logs(caplog):
    """Every record of every logger, at DEBUG (libraries' own levels lowered too)."""
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):
        if logging.getLogger(name).level > logging.DEBUG:
            caplog.set_level(logging.DEBUG, logger=name)
    return caplog


def warnings_of(caplog) -> list[str]:
    return [f"{r.name}: {r.getMessage()}" for r in caplog.records if r.levelno == logging.WARNING]


def assert_no_error_and_no_traceback(caplog) -> None:
    errors = [f"{r.levelname} {r.name}: {r.getMessage()}" for r in caplog.records if r.levelno >= logging.ERROR]
    assert not errors, errors
    assert not [r.name for r in caplog.records if r.exc_info or r.exc_text or r.stack_info]
    assert "Traceback" not in caplog.text


@pytest.mark.parametrize("provider", ["openai", "groq", "gemini"])
async def test_a_retried_500_is_one_warning_and_no_error(llm_server, all_logs, provider):
    llm_server.script_fault(provider, "500")
    llm_server.script(provider, FINAL)
    completion = await ModelChain([SPEC[provider]], max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.requests == 2
    assert_no_error_and_no_traceback(all_logs)
    (line,) = warnings_of(all_logs)
    assert line.startswith(f"askdesk.providers: {SPEC[provider]} attempt 1 of 3 failed (HTTP 500); retrying in ")
    assert "internal error" not in line  # the provider's message is not logged (it can quote the input)


async def test_each_retry_is_its_own_warning(llm_server, all_logs):
    llm_server.script_fault("openai", "429")
    llm_server.script_fault("openai", "500")
    llm_server.script("openai", FINAL)
    await ModelChain([SPEC["openai"]], max_retries=2).complete(MESSAGES, Step)
    assert_no_error_and_no_traceback(all_logs)
    first, second = warnings_of(all_logs)
    assert "attempt 1 of 3 failed (HTTP 429" in first and "attempt 2 of 3 failed (HTTP 500)" in second


@pytest.mark.parametrize("provider", ["openai", "gemini"])
@pytest.mark.parametrize("bad", ["not json at all", '{"unexpected": "shape"}'], ids=["non_json", "schema_invalid"])
async def test_a_reask_after_unusable_output_is_one_warning(llm_server, all_logs, provider, bad):
    llm_server.script_raw(provider, bad)
    llm_server.script(provider, FINAL)
    completion = await ModelChain([SPEC[provider]], max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.requests == 2
    assert_no_error_and_no_traceback(all_logs)
    (line,) = warnings_of(all_logs)
    assert line.startswith(f"askdesk.providers: {SPEC[provider]} output 1 of 3 does not fit the expected structure")
    assert line.endswith("asking again") and "shape" not in line


async def test_unusable_output_to_the_last_attempt_then_a_fallback(llm_server, all_logs):
    for _ in range(3):
        llm_server.script_raw("openai", "not json at all")
    llm_server.script("gemini", FINAL)
    await ModelChain([SPEC["openai"], SPEC["gemini"]], max_retries=2).complete(MESSAGES, Step)
    assert_no_error_and_no_traceback(all_logs)  # instructor's "Max retries exceeded" was ERROR
    reask1, reask2, fallback = warnings_of(all_logs)
    assert "output 1 of 3" in reask1 and "output 2 of 3" in reask2 and "trying the next model" in fallback


async def test_a_retried_stream_is_one_warning_and_no_error(llm_server, all_logs):
    llm_server.script_fault("openai", "500")
    llm_server.script("openai", final("Families of 4 qualify.", "faq.md"))

    async def on_partial(partial) -> bool:
        return False

    await ModelChain([SPEC["openai"]], max_retries=2).stream(MESSAGES, AgentStep, on_partial=on_partial)
    assert_no_error_and_no_traceback(all_logs)
    (line,) = warnings_of(all_logs)
    assert line.startswith(f"askdesk.providers: {SPEC['openai']} attempt 1 of 3 failed (HTTP 500); retrying in ")


async def test_retries_then_a_fallback_log_one_warning_each(llm_server, all_logs):
    llm_server.script_fault("openai", "500", times=3)
    llm_server.script("gemini", FINAL)
    completion = await ModelChain([SPEC["openai"], SPEC["gemini"]], max_retries=2).complete(MESSAGES, Step)
    assert completion.usage.provider == "gemini"
    assert_no_error_and_no_traceback(all_logs)
    retry1, retry2, fallback = warnings_of(all_logs)
    assert "attempt 1 of 3" in retry1 and "attempt 2 of 3" in retry2  # the third attempt is not retried
    assert fallback == f"askdesk.providers: model {SPEC['openai']} failed (TransientProviderError, HTTP 500); " \
                       "trying the next model"


async def test_instructor_logs_as_usual_outside_askdesk_calls(caplog):
    """Only records from inside askdesk's calls are demoted: another user of instructor in the
    same process keeps its ERROR lines."""
    caplog.set_level(logging.DEBUG)
    logging.getLogger("instructor.v2.retry").error("API call failed on attempt 1: elsewhere")
    assert [r.levelno for r in caplog.records if r.name == "instructor.v2.retry"] == [logging.ERROR]


async def test_a_turn_with_a_retry_logs_one_warning(kb_runtime, llm_server, all_logs):
    """The whole turn, through the real openai SDK: the retried call is the only line above INFO."""
    llm_server.script_error("openai", 503, message="over capacity")
    llm_server.script("openai", final("A family of 4 can earn up to $92,041 a year [1].", SMALL_KB_DOC))
    service = Askdesk(kb_runtime.settings, kb_runtime, state=MemoryState(),
                      models=ServiceModels(router=None, agent=ModelChain([SPEC["openai"]], max_retries=2), notice=None))
    try:
        result = await service.answer(AskRequest(text="What is the maximum income for a family of 4?"))
    finally:
        await service.close()
    assert not result.search_only and {r.source for r in result.references} == {SMALL_KB_DOC}
    assert_no_error_and_no_traceback(all_logs)
    (line,) = warnings_of(all_logs)
    assert "openai/gpt-4.1-mini attempt 1 of 3 failed (HTTP 503)" in line and "capacity" not in line
