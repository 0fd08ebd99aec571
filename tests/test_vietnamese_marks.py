"""Vietnamese typed without its marks is searched with them written back from the collection's
own Vietnamese pages (agent/knowledge/vietnamese_marks.py): the embedder reads "chat cay can
giay phep khong" as a language of its own, "chặt cây cần giấy phép không" as Vietnamese."""

from __future__ import annotations

from agent.evaluation.retrieval import hit_rank
from agent.knowledge import search as search_module
from agent.knowledge.search import search
from agent.knowledge.store import collection_metadata
from agent.knowledge.vietnamese_marks import Spelling
from tests.knowledge_fixtures import open_runtime

PAGE = """# Giấy phép xây dựng

Chặt cây có đường kính trên 24 inch cần giấy phép. Phí giấy phép chặt cây là bao nhiêu? Phí là $45.

Thay máy nước nóng không cần giấy phép. Văn phòng ở Salem mở cửa lúc 8 giờ.
"""


def test_marks_are_written_back_from_the_pages_own_words():
    spelling = Spelling()
    spelling.add(PAGE)
    assert spelling.restore("chat cay can giay phep khong") == "chặt cây cần giấy phép không"
    assert spelling.restore("phi giay phep chat cay bao nhieu") == "phí giấy phép chặt cây bao nhiêu"
    # a name, a code and a figure stay as typed; a syllable the pages never use too
    assert spelling.restore("van phong Salem mo cua 8 gio, TX3C xyz") == "văn phòng Salem mở cửa 8 giờ, TX3C xyz"
    assert Spelling().restore("giay phep") == "giay phep"  # no Vietnamese pages: as typed


async def test_a_question_typed_without_marks_finds_the_english_page_that_answers_it(city_permits_settings):
    """Kept city permits (tune-36-refusals, tune-38-unaccented): answered only by the English
    tree page, these were found nowhere in the top five when searched as typed."""
    async with open_runtime(city_permits_settings) as rt:
        first = await search(rt, "chat cay can giay phep khong", top_k=5)
        fee = await search(rt, "phi chat cay", top_k=5)
    assert hit_rank(first, ["24 inches"]) == 1, [(p.source, p.section) for p in first]
    assert hit_rank(fee, ["$45"]) is not None, [(p.source, p.section) for p in fee]


async def test_with_one_vietnamese_page_the_question_is_searched_as_typed(university_it_settings):
    """One page's counts are thin, and its restored questions are drawn to that page."""
    async with open_runtime(university_it_settings) as rt:
        name = rt.settings.collection
        metadata = await collection_metadata(rt, name)
        typed = "mat khau moi phai co toi thieu bao nhieu ky tu"
        assert await search_module._with_marks(rt, name, typed, metadata) == typed


async def test_the_lines_of_its_answer_are_read_against_the_question_with_its_marks(city_permits_settings):
    """Typed without marks, no line of the English tree page was quoted (the embedder could not
    read the question across languages); with its marks written back, the fee row comes first."""
    from agent.turn.service import AskRequest
    from tests.knowledge_fixtures import service_on

    async with open_runtime(city_permits_settings) as rt, service_on(rt) as service:
        result = await service.answer(AskRequest(text="phi chat cay"))
    assert result.search_only and result.references
    head = result.answer.split("**[1]**", 1)[0]
    assert "| Private tree removal, 1 to 3 trees |" in head and "$45" in head, result.answer[:800]
    assert "bằng tiếng Anh" in head  # the row's page is in English: the asker is told, in Vietnamese
