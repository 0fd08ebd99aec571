"""Section expansion: search matches a small passage and hands over its whole section."""

from __future__ import annotations

from agent.config import Settings
from agent.knowledge.chunking import chunk_document
from agent.knowledge.ingest import ingest
from agent.knowledge.search import Passage, search
from agent.knowledge.sections import Piece, join, section_text
from agent.tools.formatted_context import format_passages
from tests.knowledge_fixtures import open_runtime

ROWS = "\n".join(f"| Zone {n} | {n * 7} feet | ${n * 115:,} | form DS-{300 + n} |" for n in range(1, 31))
FEES = f"""# Setbacks and fees

## Intro

Setbacks are measured from the property line to the nearest wall.

## Setback table

Every zone has its own minimum setback and its own review fee.

| Zone | Setback | Fee | Form |
|---|---|---|---|
{ROWS}

Ask the counter when a lot is in two zones.

## Appeals

An appeal of a setback decision is filed within 12 days.
"""
TABLE_LINES = {line for line in FEES.splitlines() if line.startswith("|")}


def _pieces(text: str, chunk_chars: int = 300, overlap: int = 80) -> dict[int, Piece]:
    return {c.chunk_index: Piece(c.section, c.text) for c in chunk_document(text, chunk_chars=chunk_chars, overlap=overlap)}


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.lstrip().startswith("|")]


def test_a_section_cut_into_chunks_reads_whole_again():
    pieces = _pieces(FEES)
    table = [i for i, p in pieces.items() if p.section == "Setback table"]
    assert len(table) > 4  # the table really is spread over several chunks
    text, lo, hi = section_text(pieces, table[len(table) // 2], budget=100_000)
    assert lo <= table[0] and hi >= table[-1]  # the whole section (and, with room left, its neighbours)
    rows = _table_rows(text)
    # every row once, in order, the header once: the repeated header rows and the overlap are gone
    assert rows == [line for line in FEES.splitlines() if line.startswith("|")]
    assert text.count("Every zone has its own minimum setback") == 1 and text.count("Ask the counter") == 1
    assert "## Appeals\n\nAn appeal of a setback decision" in text


def test_within_a_budget_the_context_grows_around_the_match_and_never_cuts_a_row():
    pieces = _pieces(FEES)
    table = [i for i, p in pieces.items() if p.section == "Setback table"]
    middle = table[len(table) // 2]
    for budget in (400, 700, 1100):
        text, lo, hi = section_text(pieces, middle, budget=budget)
        assert len(text) <= budget
        assert lo <= middle <= hi and pieces[middle].text.splitlines()[-1] in text
        assert all(row in TABLE_LINES for row in _table_rows(text))  # whole rows only
    # a small budget gets the neighbours of the match, not the start of the section
    text, lo, hi = section_text(pieces, middle, budget=700)
    assert lo > table[0] and hi >= middle


def test_join_drops_the_overlap_and_a_repeated_table_header():
    before = "First paragraph.\n\nSecond paragraph ends here."
    assert join(before, "Second paragraph ends here.\n\nThird.") == f"{before}\n\nThird."
    table = "| a | b |\n|---|---|\n| 1 | 2 |"
    assert join(table, "| a | b |\n|---|---|\n| 3 | 4 |") == "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |"
    # unrelated text is kept whole
    assert join("Alpha.", "Beta.") == "Alpha.\n\nBeta."


def test_a_short_section_brings_its_neighbours_under_their_headings():
    pieces = _pieces(FEES, chunk_chars=1200, overlap=150)
    intro = next(i for i, p in pieces.items() if p.section == "Intro")
    text, lo, hi = section_text(pieces, intro, budget=100_000)
    assert text.startswith("Setbacks are measured") and "## Setback table" in text and "## Appeals" in text


async def test_search_hands_over_the_section_and_shows_each_place_once(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "setbacks.md").write_text(FEES, encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", chunk_chars=300, chunk_overlap=80, section_chars=1500)
    async with open_runtime(settings) as rt:
        await ingest(rt, [kb])
        passages = await search(rt, "setback and review fee for Zone 17", top_k=5)
        assert passages and "| Zone 17 | 119 feet | $1,955 | form DS-317 |" in passages[0].context
        for p in passages:
            assert p.context is not None and p.text.splitlines()[-1] in p.context and len(p.context) <= 1500
            assert all(row in TABLE_LINES for row in _table_rows(p.context))
        # no two passages hand over the same chunk's text
        rows = [row for p in passages for row in _table_rows(p.context) if "Zone" in row and "Setback" not in row]
        assert len(rows) == len(set(rows))
        # 0 turns expansion off: the matched passages alone, as before
        rt.settings.section_chars = 0
        plain = await search(rt, "setback and review fee for Zone 17", top_k=5)
        assert all(p.context is None for p in plain)


def test_the_model_gets_the_section_when_it_fits_and_the_passage_when_it_does_not():
    section = "line one\n" + "\n".join(f"| row {n} | {n} |" for n in range(60))
    passages = [Passage(text=f"| row {n} | {n} |", context=section, source=f"d{n}.md", score=1.0) for n in (1, 2)]
    text, used = format_passages(passages, budget=len(section) + 400)
    assert len(used) == 2 and text.count("line one") == 1  # the first with its section, the second alone
    assert len(text) <= len(section) + 400
    # a first block larger than the whole budget is cut at a line, never inside a table row
    big = Passage(text="\n".join(f"| row {n} | {n} |" for n in range(500)), source="d.md", score=1.0)
    text, used = format_passages([big], budget=900)
    body = text.split(">\n", 1)[1].rsplit("\n</document>", 1)[0]
    assert len(text) <= 900 and body.endswith("…")
    assert all(line.endswith("|") for line in body.removesuffix("…").splitlines())
