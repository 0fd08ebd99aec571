"""Routing between the documents and a registry (issue 34): a short follow-up keeps its thread's
subject, a question about a rule, rate or procedure goes to the documents even when it names a
place or a registry's word, and a request for records goes to the registry — in English,
Spanish and Vietnamese, with the ways of asking as data (agent/data/asking.yaml)."""

from __future__ import annotations

import pytest

from agent.asking import Asking, load_asking
from agent.messages import ChatMessage
from agent.registry.cue import records_cue
from agent.registry.declaration import load_declaration
from agent.registry.words import load_generic_words
from agent.understanding.wording import asks_about_rules, asks_for_records, claimed_by, leans_on_thread
from tests.conftest import REPO
from tests.knowledge_fixtures import demo_registry_capability, service_on

TEXAS = demo_registry_capability()
OFFICE = load_declaration(REPO / "examples" / "hr-it-handbook" / "registries" / "office.yaml")


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


@pytest.mark.parametrize("text", [
    "which daycares in Austin take infants?",
    "¿Qué guarderías en El Paso aceptan bebés?",
    "Nhà trẻ nào ở Houston nhận trẻ sơ sinh?",
    "is there a daycare near 78702 that's open on saturdays?",
    "¿Dónde hay guarderías con transporte en San Antonio?",
])
def test_a_request_for_records_by_their_noun_is_a_search_in_any_language(text):
    assert asks_for_records(text, TEXAS) and claimed_by(text, [TEXAS]) is TEXAS


@pytest.mark.parametrize("text", [
    "what about centers in El Paso?",  # a follow-up's lead, not "what centers"
    "what is the center's staff-to-child ratio?",
    "can a daycare in Houston charge parents for absent days?",
])
def test_a_question_about_the_records_is_not_a_request_for_them(text):
    assert not asks_for_records(text, TEXAS)


@pytest.mark.parametrize("text", [
    "Does a provider in El Paso have to record attendance in TX3C for drop-in care?",
    "reimbursement for part-time toddler care at a Fort Worth daycare",
    "¿Puede una guardería en Houston cobrar por los días que el bebé falta?",
    "Nhà trẻ ở Houston phải điểm danh trên TX3C như thế nào?",
    "Trung tâm ở Dallas có được thu thêm tiền của phụ huynh khi trẻ nghỉ không?",
])
def test_a_rule_or_procedure_naming_a_place_and_a_registry_word_is_for_the_documents(text):
    assert asks_about_rules(text) and claimed_by(text, [TEXAS]) is None


def test_a_rule_question_asked_as_which_is_for_the_documents_but_a_can_is_no_rule_against_records():
    assert claimed_by("which providers are eligible for the TRS bonus?", [TEXAS]) is None
    assert claimed_by("¿Qué guarderías pueden recibir bebés en Austin?", [TEXAS]) is TEXAS  # "pueden": can
    assert claimed_by("¿Puede una guardería en Austin recibir bebés con subsidio?", [TEXAS]) is None


def test_asking_where_keeps_a_search_that_also_has_a_rule_word():
    text = "where can a parent get drop-in care in Lubbock?"  # "can a parent…" alone reads as a rule
    assert asks_about_rules(text) and claimed_by(text, [TEXAS]) is TEXAS


def test_a_registrys_own_nouns_fill_the_ways_of_asking():
    """"campuses" is the office declaration's word, not the language's: only its cue knows it."""
    office = records_cue(OFFICE, load_generic_words())
    assert office("which campuses have a cafeteria?") and office("Văn phòng nào mở cửa thứ bảy?")
    assert not asks_for_records("which campuses have a cafeteria?", TEXAS)
    # and the ways of asking are the data file's: without its English patterns, no English request
    data = load_asking().model_dump()
    data["records"]["en"] = []
    assert Asking.model_validate(data).records_re(["campuses"]).search("which campuses have a cafeteria?") is None


def test_a_short_message_leans_on_its_thread_and_a_full_one_does_not():
    thread = [user("staff-to-child ratio for infants at a TRS 4-star center")]
    assert leans_on_thread("and in Austin?", thread, claimed=False)
    assert leans_on_thread("any in Plano?", thread, claimed=False)
    assert not leans_on_thread("any in Plano?", [], claimed=False)  # no thread
    assert not leans_on_thread("daycares near 78702", thread, claimed=True)  # a search by itself
    assert not leans_on_thread("how much is the parent share of cost for a family of 3 in BCY26?", thread, claimed=False)


# --------------------------------------------------------------------------- routed by the service

RULE = "staff-to-child ratio for infants at a TRS 4-star center"
SEARCH = "infant care in Austin"


@pytest.mark.parametrize("thread,text,expected", [
    ([RULE], "and in Austin?", "knowledge"),
    ([RULE], "what about centers in Austin?", "knowledge"),  # its words alone would be a search
    ([RULE], "and for drop-in care in Austin?", "knowledge"),
    (["¿la guardería puede cobrar cuando el niño falta?"], "¿y en Austin?", "knowledge"),
    (["Nhà trẻ phải điểm danh trên TX3C khi nào?"], "và ở Austin?", "knowledge"),
    ([SEARCH], "and toddlers?", "facility"),
    ([SEARCH], "what about near 78745?", "facility"),
    ([SEARCH], "any with transportation?", "facility"),
    (["guarderías en Austin que acepten bebés"], "¿y con transporte?", "facility"),
    ([SEARCH], "and how much do they charge?", "knowledge"),  # a rule about the records found
    ([RULE], "and which daycares in Austin take infants?", "facility"),  # asks for records itself
    (["how often does Texas have to do the child care market rate survey?", "who runs it?"],
     "which providers are left out of it?", "knowledge"),  # "which providers" pointing back at the thread
    ([SEARCH], "how much is the parent share of cost for a family of 3?", "knowledge"),  # a new question
])
async def test_a_short_follow_up_is_routed_with_its_threads_subject(kb_runtime, thread, text, expected):
    async with service_on(kb_runtime) as service:
        route = await service.route(text, [user(m) for m in thread])
    assert route.name == expected, route


async def test_a_follow_up_of_a_search_searches_with_the_threads_criteria(kb_runtime):
    async with service_on(kb_runtime) as service:
        route = await service.route("and toddlers?", [user(SEARCH), ChatMessage(role="assistant", content="(3 found)")])
    assert route.name == "facility" and route.rewritten and route.decided_by == "heuristic"
    assert route.query.startswith(SEARCH) and route.query.endswith("toddlers?")


async def test_with_a_router_model_a_follow_up_of_a_search_needs_no_model_call_and_one_about_the_documents_gets_one(kb_runtime):
    from agent.providers.function import ScriptedModel
    from agent.understanding.identity import Identity
    from tests.fakes.steps import route as route_step

    identity = Identity(domain="Texas child care", capabilities="child care")
    async with service_on(kb_runtime) as service:
        classifier = service.context(None).classifier
        model = ScriptedModel(route_step("knowledge", "staff-to-child ratio for infants at a TRS 4-star center in Austin"))

        async def find(query, also=()):
            return None

        searched = await classifier.decide(classifier.read("and toddlers?", [user(SEARCH)]), find,
                                           model=model, identity=identity)
        assert searched.name == "facility" and model.calls == []  # the rules route it: no call
        asked = await classifier.decide(classifier.read("and in Austin?", [user(RULE)]), find,
                                        model=model, identity=identity)
        assert asked.name == "knowledge" and asked.decided_by == "model" and len(model.calls) == 1
        prompt = model.calls[0].messages[-1].content
        assert "keeps the route of" in prompt and RULE in prompt  # the prompt states the rule, with the thread
