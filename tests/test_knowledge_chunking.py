"""Chunker, tokenizer and language guesser: pure functions, no store, no embedder."""

from __future__ import annotations

import re

from agent.knowledge.chunking import chunk_document, split_sections
from agent.knowledge.language import detect_language
from agent.knowledge.sparse import bm25_document, bm25_query, term_index, tokens

DOC = """# Child Care Guide

Intro paragraph about the guide.

## Eligibility

### Income

Families must earn less than $4,106 per pay period.

### Work hours

Single parents: 25 hours/week.

## Payments

Rates are daily.
"""


def test_heading_paths_follow_the_outline():
    sections = split_sections(DOC, title="Child Care Guide")
    assert [s.path for s in sections] == [[], ["Eligibility", "Income"], ["Eligibility", "Work hours"], ["Payments"]]
    chunks = chunk_document(DOC, title="Child Care Guide", chunk_chars=500, overlap=0)
    assert [c.section for c in chunks] == ["", "Eligibility > Income", "Eligibility > Work hours", "Payments"]
    assert [c.chunk_index for c in chunks] == [0, 1, 2, 3]
    assert chunks[1].embed_text("Child Care Guide").startswith("Child Care Guide — Eligibility > Income\n\n")


def test_headings_inside_code_fences_are_text():
    text = "## Real\n\n```\n# not a heading\n```\n\nafter"
    sections = split_sections(text)
    assert [s.path for s in sections] == [["Real"]]
    assert "# not a heading" in sections[0].body


def _numbers(text: str) -> list[str]:
    return re.findall(r"\$?\d[\d,.:-]*\d|\d", text)


def test_long_prose_is_cut_between_sentences_and_never_inside_a_number():
    sentences = [f"Rate number {i} is ${i},{i:03d}.50 per month for families of {i}." for i in range(1, 80)]
    text = "## Rates\n\n" + " ".join(sentences)
    chunks = chunk_document(text, chunk_chars=300, overlap=60)
    assert len(chunks) > 5
    all_numbers = set(_numbers(text))
    for chunk in chunks:
        assert len(chunk.text) <= 300
        assert chunk.section == "Rates"
        # every number in a chunk is a whole number of the source (no "$12,0" + "12.50" halves)
        assert set(_numbers(chunk.text)) <= all_numbers
        assert chunk.text[0].isupper(), chunk.text[:30]  # starts at a sentence boundary
    # overlap: consecutive chunks share a whole sentence
    assert chunks[0].text.split(". ")[-1].rstrip(".") in chunks[1].text


def test_words_longer_than_the_budget_are_not_cut():
    token = "https://example.org/" + "a" * 400
    chunks = chunk_document(f"## Links\n\nsee {token} for more", chunk_chars=100, overlap=0)
    assert any(token in c.text for c in chunks)


def test_table_rows_stay_whole_and_continuations_repeat_the_header():
    header = "| Family size | Monthly | Bi-weekly |\n|---|---|---|"
    rows = [f"| {n} | ${n * 1000 + 123:,} | ${n * 461 + 7:,} |" for n in range(1, 40)]
    text = "## Income limits\n\nLimits for BCY 2026:\n\n" + header + "\n" + "\n".join(rows) + "\n\nAfter the table."
    chunks = chunk_document(text, chunk_chars=400, overlap=100)
    table_chunks = [c for c in chunks if "| Family size |" in c.text]
    assert len(table_chunks) > 2
    seen_rows = set()
    for chunk in chunks:
        for line in chunk.text.splitlines():
            if line.startswith("|"):
                assert line.endswith("|"), f"row cut: {line!r}"
                assert line in text
                seen_rows.add(line)
        if any(line.startswith("| 3") for line in chunk.text.splitlines()):
            assert "| Family size |" in chunk.text
    assert set(rows) <= seen_rows
    assert any("After the table." in c.text for c in chunks)


def test_the_overlap_never_carries_part_of_a_table_into_the_next_chunk():
    """Cells holding sentences once let the overlap cut the table's last row in half
    ("Visitors wait here. |") and start the next chunk with it."""
    rows = [f"| Rule {i} | Staff must sign in. Visitors wait here. |" for i in range(5)]
    text = ("## Rules\n\nIntro.\n\n| Rule | Text |\n|---|---|\n" + "\n".join(rows) + "\n\n"
            + "Another paragraph that is fairly long and goes on. " * 8)
    chunks = chunk_document(text, chunk_chars=400, overlap=150)
    assert len(chunks) > 1
    for chunk in chunks:
        for line in chunk.text.splitlines():
            if "|" in line:
                assert line.startswith("|") and line.endswith("|") and line in text, f"row cut: {line!r}"
    assert sum(c.text.count("| Rule 4 |") for c in chunks) == 1  # each row once


def test_lead_in_line_stays_with_what_it_introduces():
    qa = "\n\n".join(f"**Q{i}: What is rule {i}?**\n\n" + f"Rule {i} says something long enough. " * 6 for i in range(1, 12))
    chunks = chunk_document("## Q&A\n\n" + qa, chunk_chars=500, overlap=0)
    for chunk in chunks:
        assert not chunk.text.rstrip().endswith("?**"), "a question was separated from its answer"


def test_plain_prose_without_headings_is_chunked():
    prose = ("The program helps families pay for care. " * 60).strip()
    chunks = chunk_document(prose, chunk_chars=600, overlap=100)
    assert len(chunks) >= 4 and all(c.section == "" for c in chunks)
    assert all(len(c.text) <= 600 for c in chunks)


def test_tokens_keep_amounts_codes_and_pairs():
    toks = tokens("Family of 5 must earn under $4,106; see TX3C and HB 59 (call 800-735-2989).", "en")
    for expected in ["4,106", "4106", "tx3c", "hb", "59", "hb59", "800-735-2989", "famili"]:
        assert expected in toks, expected
    assert "of" not in toks and "and" not in toks


def test_a_code_is_one_term_however_it_is_written_and_a_year_code_also_in_its_short_form():
    """"BCY26", "BCY 26" and "bcy-26" are one term; "BCY2025" / "FY 2024" also match "BCY25" /
    "FY24", the way contract and fiscal years are abbreviated."""
    for written in ("BCY26", "BCY 26", "bcy-26"):
        assert "bcy26" in tokens(f"{written} rates", "en"), written
    for long, short in (("BCY2025 chart", "bcy25"), ("bcy 2025", "bcy25"), ("FY-2024 report", "fy24")):
        assert short in tokens(long, "en"), long
    assert "hb12" not in tokens("HB 5912", "en")  # not a year: no short form
    assert "covid19" not in tokens("covid-19", "en")  # a word, not a short code


def test_tokens_fold_accents_and_stem_spanish():
    toks = tokens("Los cambios se reportan en 14 días calendario", "es")
    assert {"cambi", "report", "14", "calendari"} <= set(toks) and "los" not in toks
    assert set(tokens("días", "es")) & set(tokens("dias", "es"))  # accents optional in queries
    assert "tong" in tokens("Tổng đài hỗ trợ", "vi") and "dai" in tokens("Tổng đài hỗ trợ", "vi")


def test_bm25_weights_saturate_and_normalise_by_length():
    short = bm25_document("KinderSign tablet", "en")
    repeated = bm25_document("KinderSign " * 10 + "tablet", "en")
    k = term_index("kindersign")
    w_short = dict(zip(short.indices, short.values))[k]
    w_rep = dict(zip(repeated.indices, repeated.values))[k]
    assert w_rep > w_short  # more occurrences help...
    assert w_rep < 2.2  # ...but saturate below k1 + 1
    q = bm25_query("KinderSign KinderSign tablet")
    assert set(q.values) == {1.0} and k in q.indices
    assert q.indices == sorted(q.indices)


def test_language_guess():
    assert detect_language("What is the income limit for a family of four?") == "en"
    assert detect_language("¿Cuál es el límite de ingresos para una familia de cuatro?") == "es"
    assert detect_language("Tổng đài hỗ trợ làm việc từ mấy giờ tới mấy giờ vậy?") == "vi"
    assert detect_language("TX3C?", default="en") == "en"
