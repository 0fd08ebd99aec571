"""Vietnamese in the keyword index: words indexed as written (agent/data/languages.yaml
`unstemmed`), so a question typed without its marks matches the page's words."""

from __future__ import annotations

import pytest

from agent.knowledge.language import detect_language
from agent.knowledge.sparse import tokens
from tests.knowledge_fixtures import REPO

PAGE = REPO / "examples" / "city-permits" / "kb" / "sua-nha-va-kiem-tra-vi.md"


@pytest.mark.parametrize("typed", [
    "giay phep het han 180 ngay",  # no marks: read as English by the language guess
    "giấy phép hết hạn 180 ngày",
])
def test_a_question_with_or_without_marks_matches_the_pages_words(typed):
    page = set(tokens(PAGE.read_text(encoding="utf-8"), "vi"))
    asked = {term for word in typed.split() for term in tokens(word, detect_language(typed))}
    # "giấy" and "ngày" once became "giấi" and "ngài" (an English stemmer's y -> i), which "giay"
    # and "ngay" never matched
    assert {"giay", "ngay"} <= asked or {"giấy", "ngày"} <= asked
    assert asked <= page, sorted(asked - page)


def test_vietnamese_words_keep_their_endings_and_english_and_spanish_are_still_stemmed():
    assert detect_language("giay phep het han") == "en"  # why the page's folded forms matter
    assert tokens("máy giặt ngày", "vi") == ["máy", "may", "giặt", "giat", "máygiặt", "maygiat", "ngày", "ngay",
                                            "giặtngày", "giatngay"]
    assert tokens("inspections scheduled", "en")[:2] == ["inspect", "schedul"]
    assert tokens("inspecciones programadas", "es")[:2] == ["inspeccion", "program"]
