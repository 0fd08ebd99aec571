"""The wording rules and the classifier's decisions (stub search, scripted router model and
topic judge). The off-topic decision by meaning runs for real in tests/test_topicality.py."""

from __future__ import annotations

import pytest

from agent.capabilities.base import Capabilities, Found
from agent.capabilities.knowledge import KnowledgeCapability
from agent.knowledge.search import Passage
from agent.messages import ChatMessage
from agent.prompts import default_prompts
from agent.providers.base import ProviderError, Usage
from agent.providers.function import ScriptedModel
from agent.tools.base import ToolResult
from agent.turn.state import CountedModel, Ledger
from agent.understanding.classify import Classifier
from agent.understanding.gate import TopicVerdict
from agent.understanding.identity import Identity
from agent.understanding.route import Clarify, Greet, Refuse, Use
from agent.understanding.wording import classify_rules, heuristic_rewrite, is_followup
from agent.yamlio import safe_load
from tests.conftest import DEV_EVAL, REPO
from tests.knowledge_fixtures import demo_registry_capability
from tests.fakes.steps import route as route_step

DEV = safe_load(DEV_EVAL.read_text(encoding="utf-8"))
TEXAS = [demo_registry_capability()]


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def claimed(text: str, capabilities=TEXAS) -> str | None:
    """The capability whose search the wording alone makes `text`, by name (None: none)."""
    match classify_rules(text, [], capabilities).route:
        case Use(capability=capability):
            return capability.name
    return None


@pytest.mark.parametrize("item", DEV["retrieval"] + DEV["offtopic"], ids=lambda i: i["id"])
def test_wording_rules_never_refuse(item):
    """Refusal is decided by meaning (agent/understanding/gate.py), never by a word list."""
    assert not isinstance(classify_rules(item["question"], [], TEXAS).route, (Refuse, Greet))


@pytest.mark.parametrize("item", DEV["facility"], ids=lambda i: i["id"])
def test_dev_facility_queries_route_to_facility_with_the_demo_domain_file(item):
    assert claimed(item["query"]) == "facility"


def test_the_registrys_own_nouns_make_a_search():
    """'daycares' names a record of the demo's registry (its declaration's words, not code)."""
    assert claimed("daycares near 78702") == "facility"


def test_without_a_registry_nothing_is_a_registry_search():
    assert classify_rules("infant care within 10 miles of 78702", []).route is None


@pytest.mark.parametrize("text", ["hi", "Hello there!", "thanks!", "what can you do?", "gracias", "xin chào", "good morning team"])
def test_greetings_are_smalltalk(text):
    assert isinstance(classify_rules(text, []).route, Greet)


def test_knowledge_questions_with_facility_words_stay_knowledge():
    # "center" + a board name, but it asks for a rate: the documents answer it, not the registry
    assert classify_rules("gulf coast board BCY25 - TRS3 center, infant FT daily rate?", [], TEXAS).route is None


@pytest.mark.parametrize("text", [
    "¿Cuánto paga TWC a una guardería en Houston por un bebé?",  # an amount, asked in Spanish
    "¿qué requisitos tiene una guardería en Dallas para ser Texas Rising Star?",
    "mức trợ cấp cho nhà trẻ ở Houston là bao nhiêu?",  # "how much", asked in Vietnamese
    "how much does TWC pay a daycare in Houston for an infant?",
])
def test_a_question_for_the_documents_naming_a_place_is_not_a_facility_search_in_any_language(text):
    assert classify_rules(text, [], TEXAS).route is None  # decided by meaning: the documents answer it


@pytest.mark.parametrize("text", [
    "guarderias en Austin que acepten bebes",  # typed without accents
    "nha tre o Dallas nhan tre so sinh",  # Vietnamese without tone marks
    "centros cerca del 78702",
    "trung tâm ở Houston có đưa đón không",
])
def test_facility_searches_are_recognised_with_or_without_accents(text):
    assert claimed(text) == "facility"


@pytest.mark.parametrize("text,history_q,detail", [
    ("What if their income goes up?", "income limit for a family of 4?", "their income goes up?"),
    ("And another child?", "PSoC for a family of 3 at 45% SMI?", "another child?"),
    ("and for a family of 6?", "income limit for a family of 4?", "family of 6?"),
])
def test_followup_lead_words_are_dropped_whole(text, history_q, detail):
    assert heuristic_rewrite(text, [user(history_q)]).endswith(detail)


@pytest.mark.parametrize("conv", DEV["conversations"], ids=lambda c: c["id"])
def test_dev_second_turns_are_followups_and_get_a_self_contained_rewrite(conv):
    first, second = conv["turns"][0]["question"], conv["turns"][1]["question"]
    history = [user(first), ChatMessage(role="assistant", content="(answer)")]
    assert is_followup(second, history)
    assert not is_followup(second, [])
    query = heuristic_rewrite(second, history)
    assert query != second and len(query) > len(second)
    # the topic of the first question travels with the new detail
    assert query.startswith(" ".join(first.split()[:4]))


def test_rewrite_replaces_old_figures_with_the_new_ones_but_keeps_years():
    history = [user("under the BCY2025 PSOC chart, what's the weekly for a fam of 3 making $2,890/mo?")]
    query = heuristic_rewrite("and a family of 4 at $5,161/mo?", history)
    assert "$2,890" not in query and "$5,161" in query and "BCY2025" in query and "PSOC" in query


def test_rewrite_anchors_on_the_last_standalone_question():
    history = [user("min hrs per week a single parent has to work?"), user("and for two-parent families?")]
    assert heuristic_rewrite("and for teen parents?", history).startswith("min hrs per week")


# --------------------------------------------------------------------------- the classifier


class StubSearch:
    """The turn's retrieval: a `find(query, also)` returning one passage of `score`."""

    def __init__(self, score: float | None):
        self.score = score
        self.queries: list[str] = []
        self.also: list[list] = []

    async def __call__(self, query: str, also=()):
        self.queries.append(query)
        self.also.append(list(also))
        if self.score is None:
            return None
        passage = Passage(text="t", source="kb.md", score=self.score, dense_score=self.score)
        return Found("knowledge", "get_formatted_context", {"query": query},
                     ToolResult(text=f"docs for {query}", data=[passage]), query)


def prompts_of(model: ScriptedModel) -> list[str]:
    """What the router model was asked, call by call."""
    return [call.messages[-1].content for call in model.calls]


class ScriptedJudge:
    """Stands in for agent.understanding.gate.TopicCheck (which needs an embedder and a
    calibrated knowledge base): `off` messages are refused, `doubt` ones doubtful, the rest on topic."""

    def __init__(self, off: set[str] = frozenset(), doubt: set[str] = frozenset()):
        self.off, self.doubt, self.judged, self.refers = off, doubt, [], []

    async def calibrated(self):
        return None

    async def judge(self, text, kb, in_thread=False, refers_back=False):
        self.judged.append((text, in_thread))
        self.refers.append(refers_back)
        zone = "off" if text in self.off else "doubt" if text in self.doubt else "on"
        return TopicVerdict(zone, "scripted")


IDENTITY = Identity(domain="Texas child care", capabilities="child care")


class Routing:
    """A classifier over the knowledge base and the demo registry, its model calls counted."""

    def __init__(self, search, model=None, judge=None):
        capabilities = Capabilities([KnowledgeCapability(None), *TEXAS])
        self.classifier = Classifier(default_prompts(), capabilities,
                                     judge or ScriptedJudge({"who won the Red River Showdown last year?"},
                                                            {"what should I eat tonight?", "what's the chart say"}))
        self.search, self.ledger = search, Ledger()
        self.model = CountedModel(model, self.ledger) if model is not None else None

    async def route(self, text, history):
        reading = self.classifier.read(text, history)
        return await self.classifier.decide(reading, self.search, model=self.model, identity=IDENTITY)


def router(search, model=None, judge=None) -> Routing:
    return Routing(search, model, judge)


async def test_clear_cases_never_call_the_router_model():
    model = ScriptedModel()  # any call would fail: nothing scripted
    search = StubSearch(0.93)
    r = router(search, model)
    assert (await r.route("who won the Red River Showdown last year?", [])).name == "offtopic"
    assert (await r.route("hi", [])).name == "smalltalk"
    assert (await r.route("baby care within 10 miles of 78702", [])).name == "facility"
    decided = await r.route("BCY26 PSoC chart for a family of 3?", [])
    assert decided.name == "knowledge" and decided.decided_by == "prefilter" and len(r.ledger) == 0
    # refusal needs the similarity too (the answer reuses it): one search per message
    assert search.queries == ["who won the Red River Showdown last year?", "BCY26 PSoC chart for a family of 3?"]


async def test_a_doubtful_message_goes_to_the_router_model_which_can_refuse():
    model = ScriptedModel(route_step("offtopic"))
    r = router(StubSearch(0.84), model)
    decided = await r.route("what should I eat tonight?", [])
    assert decided.name == "offtopic" and decided.decided_by == "model" and len(r.ledger) == 1
    # the model is shown what the documents nearest the message are about
    assert "kb.md" in prompts_of(model)[0]


async def test_a_doubtful_message_without_a_model_is_answered_and_marked_borderline():
    decided = await router(StubSearch(0.84)).route("what should I eat tonight?", [])
    assert decided.name == "knowledge" and decided.decided_by == "heuristic" and decided.borderline


async def test_a_clear_message_never_calls_the_router_model_either_way():
    model = ScriptedModel()  # any call would fail
    r = router(StubSearch(0.84), model)
    assert (await r.route("who won the Red River Showdown last year?", [])).name == "offtopic"
    assert (await r.route("BCY26 PSoC chart for a family of 3?", [])).name == "knowledge"
    assert len(r.ledger) == 0


async def test_the_router_model_can_only_name_a_route_that_exists():
    model = ScriptedModel(route_step("weather"))  # not a route of this deployment: invalid output
    r = router(StubSearch(0.84), model)
    with pytest.raises(Exception):
        await r.route("what should I eat tonight?", [])
    schema = model.calls[0].response_model.model_json_schema()
    assert set(schema["properties"]["route"]["enum"]) == {"knowledge", "facility", "smalltalk", "clarify", "offtopic"}


async def test_followup_is_rewritten_by_the_router_model_without_searching_first():
    rewritten = "minimum weekly work or school hours for two-parent families to qualify for CCS"
    model = ScriptedModel(route_step("knowledge", rewritten))
    search = StubSearch(0.9)
    history = [user("min hrs per week a single parent has to work or be in school to qualify?"),
               ChatMessage(role="assistant", content="25 hours a week.")]
    decided = await router(search, model).route("and for two-parent families?", history)
    assert decided.name == "knowledge" and decided.rewritten and decided.query == rewritten and not decided.also
    assert search.queries == []  # the answer's retrieval searches the rewrite, once
    assert "single parent" in prompts_of(model)[0] and "25 hours a week." in prompts_of(model)[0]


async def test_router_model_failure_falls_back_to_the_fused_search():
    failed = Usage(provider="groq", model="llama", error="HTTP 503")
    model = ScriptedModel(ProviderError("groq answered HTTP 503", provider="groq", attempts=[failed]))
    history = [user("when does the CCS payment for Aug 11-24 2025 services get issued?")]
    search = StubSearch(0.9)
    r = router(search, model)
    decided = await r.route("what about the june 16-29 period?", history)
    assert decided.name == "knowledge" and decided.decided_by == "heuristic"
    assert r.ledger.usages == [failed]  # the failed call still counts for the turn
    # the message alone, fused with the message in the thread's context
    assert decided.query == "what about the june 16-29 period?"
    ((contextual, weight),) = decided.also
    assert "CCS payment" in contextual and "june 16-29" in contextual and weight > 0
    assert search.also[-1] == decided.also


async def test_every_message_in_a_thread_is_searched_alone_and_in_context_without_a_model():
    """No follow-up wording needed: a long follow-up that leans on the thread gets its context."""
    search = StubSearch(0.9)
    judge = ScriptedJudge()
    history = [user("how many CCR navigator positions does the PDG B-5 grant fund?")]
    text = "what are those people supposed to focus on?"
    decided = await router(search, judge=judge).route(text, history)
    assert decided.name == "knowledge" and search.queries == [text, text]  # judged alone, then fused
    ((contextual, _),) = search.also[1]
    assert contextual.startswith("how many CCR navigator") and contextual.endswith("supposed to focus on?")
    assert decided.also == search.also[1]
    assert judge.judged == [(text, True)]  # judged on its own, with the thread's leniency
    assert judge.refers == [True]  # "those people": it points back at the thread, more leniency
    # a first message is searched once, alone
    await router(search, judge=judge).route("PDG B-5 navigators?", [])
    assert search.also[-1] == [] and judge.judged[-1] == ("PDG B-5 navigators?", False)


async def test_an_offtopic_message_inside_a_thread_is_still_refused():
    history = [user("how many CCR navigator positions does the PDG B-5 grant fund?")]
    judge = ScriptedJudge({"any good deals on a standing desk?"})
    search = StubSearch(0.9)
    decided = await router(search, judge=judge).route("any good deals on a standing desk?", history)
    assert decided.name == "offtopic" and search.also == [[]]  # no fused search for a refusal


async def test_router_model_asks_one_clarifying_question():
    model = ScriptedModel(route_step("clarify", clarification="Which year's chart?"))
    decided = await router(StubSearch(0.85), model).route("what's the chart say", [])
    assert isinstance(decided, Clarify) and decided.name == "clarify" and decided.question == "Which year's chart?"


def test_rewrite_moves_years_for_the_year_before_or_after():
    history = [user("how many CDA scholarships did T.E.A.C.H. give out in FY 2024?")]
    assert heuristic_rewrite("and the year before?", history) == "how many CDA scholarships did T.E.A.C.H. give out in FY 2023?"
    assert "FY 2025" in heuristic_rewrite("what about the following year?", history)


@pytest.mark.parametrize("text", ["guardería para bebés en Houston", "cuidado de medio tiempo en Houston",
                                  "nhà trẻ có đưa đón ở Houston", "drop in daycare around Austin"])
def test_facility_searches_in_other_languages_are_recognised(text):
    """Place markers and criteria come from data, not English regexes."""
    assert claimed(text) == "facility"
    assert classify_rules("¿cuánto cuesta el cuidado en Houston?", [], TEXAS).route is None  # no criterion
