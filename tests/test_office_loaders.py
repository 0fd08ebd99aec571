"""Word, PowerPoint and Excel files (agent/knowledge/office.py): built here with the writer
libraries, read back as Markdown-flavoured text (headings, lists, tables whose rows are never
cut, slides with notes, sheets), refused with a clear reason when empty, scanned or damaged,
and ingested from a folder by `askdesk ingest` so that they are found by search."""

from __future__ import annotations

import datetime as dt
import io
import json
import re

import pytest
from docx import Document as WordDocument
from openpyxl import Workbook
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches
from typer.testing import CliRunner

from agent.knowledge import attached, office
from agent.knowledge.chunking import chunk_document, split_sections
from agent.knowledge.loaders import SUPPORTED_SUFFIXES, LoadError, load_bytes, load_document
from bot.cli import app

DOCX_TYPE = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _png() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(out, format="PNG")
    return out.getvalue()


def _save(document) -> bytes:
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def _policy_docx() -> bytes:
    d = WordDocument()
    d.add_heading("Leave Policy", 0)  # the Title style
    d.add_paragraph("This policy covers every member of staff.")
    d.add_paragraph("# of days is counted per year")  # body text that Markdown would take for a heading
    d.add_heading("Annual leave", 1)
    d.add_paragraph("Staff get 25 days of zebraquokka leave.")
    d.add_paragraph("Ask your manager", style="List Bullet")
    d.add_paragraph("Book it in the HR system", style="List Bullet")
    d.add_paragraph("Fill in the form", style="List Number")
    d.add_paragraph("Wait for approval", style="List Number")
    d.add_heading("Rates", 2)
    table = d.add_table(rows=4, cols=3)
    cells = [["Grade", "Days", "Notes"], ["A", "25", "with | pipe"], ["B", "30", "two\nlines"], ["C", "", ""]]
    for i, row in enumerate(cells):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    table.cell(2, 2).merge(table.cell(3, 2))  # merged down: row C repeats B's note
    d.add_heading("Carry-over", 1)
    d.add_paragraph("Up to 5 days carry over.")
    return _save(d)


def test_word_headings_lists_and_tables_become_markdown():
    doc = load_bytes("leave-policy.docx", _policy_docx())
    assert doc.format == "docx" and doc.title == "Leave Policy"
    text = doc.text
    assert text.startswith("# Leave Policy\n\nThis policy covers every member of staff.")
    assert "\n# Annual leave\n" in text and "\n## Rates\n" in text and "\n# Carry-over\n" in text
    assert "- Ask your manager\n- Book it in the HR system" in text
    assert "1. Fill in the form\n2. Wait for approval" in text
    assert ("| Grade | Days | Notes |\n|---|---|---|\n| A | 25 | with / pipe |\n| B | 30 | two lines |\n"
            "| C |  | two lines |") in text
    assert "\\# of days" in text  # escaped: text, not a heading

    sections = split_sections(text, doc.title)
    paths = [" > ".join(s.path) for s in sections]
    assert paths == ["", "Annual leave", "Annual leave > Rates", "Carry-over"]
    assert "25 days of zebraquokka" in sections[1].body and "# of days" in sections[0].body


def test_a_word_table_cut_into_chunks_keeps_every_row_whole_with_its_header():
    d = WordDocument()
    d.add_heading("BCY 2026", 0)
    d.add_heading("Income limits", 1)
    table = d.add_table(rows=1, cols=3)
    for j, value in enumerate(["Family size", "Monthly limit", "Note"]):
        table.rows[0].cells[j].text = value
    rows = []
    for n in range(1, 121):
        values = [str(n), f"${n * 1000 + 123:,}", f"Rule {n} applies. Ask the office."]
        rows.append("| " + " | ".join(values) + " |")
        for cell, value in zip(table.add_row().cells, values):
            cell.text = value
    doc = load_bytes("limits.docx", _save(d))
    header = "| Family size | Monthly limit | Note |\n|---|---|---|"
    chunks = chunk_document(doc.text, title=doc.title, chunk_chars=500, overlap=150)
    assert len(chunks) > 5
    seen = []
    for chunk in chunks:
        assert chunk.section == "Income limits"
        lines = chunk.text.splitlines()
        assert chunk.text.startswith(header), chunk.text[:80]  # every part reads as a table
        for line in lines[2:]:
            assert line in rows, f"cut or foreign row: {line!r}"
            seen.append(line)
    assert seen == rows  # every row once, in order: the overlap carries no table rows


def test_a_scanned_or_empty_word_document_is_refused_with_a_reason():
    scanned = WordDocument()
    scanned.add_picture(io.BytesIO(_png()))
    with pytest.raises(LoadError, match=re.escape("no text: the document holds only images (scanned?)")):
        load_bytes("scan.docx", _save(scanned))
    with pytest.raises(LoadError, match="^empty document$"):
        load_bytes("blank.docx", _save(WordDocument()))


def _deck() -> bytes:
    prs = Presentation()
    first = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
    first.shapes.title.text = "Quarterly update"
    body = first.placeholders[1].text_frame
    body.text = "Revenue up 12%"
    sub = body.add_paragraph()
    sub.text, sub.level = "Mostly from the north", 1
    first.notes_slide.notes_text_frame.text = "Mention the quokkadeck numbers.\nThen take questions."
    second = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    second.shapes.title.text = "Sales by region"
    table = second.shapes.add_table(3, 2, Inches(1), Inches(2), Inches(6), Inches(2)).table
    for i, row in enumerate([["Region", "Sales"], ["North", "$1,200"], ["South", "$900"]]):
        for j, value in enumerate(row):
            table.cell(i, j).text = value
    third = prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title
    data = CategoryChartData()
    data.categories = ["Q1", "Q2"]
    data.add_series("Visitors", (1500, 2250.5))
    third.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(5), Inches(4), data)
    third.shapes.add_textbox(Inches(1), Inches(0.5), Inches(5), Inches(1)).text_frame.text = "Visitors per quarter"
    prs.slides.add_slide(prs.slide_layouts[6])  # an empty slide: no section
    return _save(prs)


def test_each_slide_is_a_section_with_its_text_tables_and_notes():
    doc = load_bytes("q3.pptx", _deck())
    assert doc.format == "pptx" and doc.title == "Quarterly update"
    sections = split_sections(doc.text, doc.title)
    assert [s.path for s in sections] == [["Slide 1: Quarterly update"], ["Slide 2: Sales by region"], ["Slide 3"]]
    one, two, three = (s.body for s in sections)
    assert one == ("- Revenue up 12%\n   - Mostly from the north\n\n"
                   "Notes: Mention the quokkadeck numbers.\nThen take questions.")
    assert two == "| Region | Sales |\n|---|---|\n| North | $1,200 |\n| South | $900 |"
    # reading order: the text box above the chart comes first
    assert three == ("Visitors per quarter\n\nChart: Visitors\n\n"
                     "|  | Visitors |\n|---|---|\n| Q1 | 1500 |\n| Q2 | 2250.5 |")
    assert "Slide 4" not in doc.text


def test_a_presentation_of_pictures_or_nothing_is_refused_with_a_reason():
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    slide.shapes.add_picture(io.BytesIO(_png()), Inches(1), Inches(1))
    with pytest.raises(LoadError, match=re.escape("no text: the presentation holds only images (scanned?)")):
        load_bytes("scanned.pptx", _save(prs))
    with pytest.raises(LoadError, match="^empty presentation$"):
        load_bytes("blank.pptx", _save(Presentation()))


def _workbook() -> bytes:
    wb = Workbook()
    fees = wb.active
    fees.title = "Fees"
    fees["B1"] = "Fee schedule 2026"  # a caption above the table
    fees.append([])
    fees.append([None, "Item", None, "Price", "Share"])  # column A and C stay empty: dropped
    fees.append([None, "Lunch", None, 4.5, 0.25])
    fees.append([])  # an empty row inside the table: dropped
    fees.append([None, "Trip", None, 1234.5, 0.125])
    for row in (4, 6):
        fees.cell(row, 4).number_format = '"$"#,##0.00'
        fees.cell(row, 5).number_format = "0.0%"
    dates = wb.create_sheet("Term dates")
    dates.append(["Term", "Starts", "Open"])
    dates.append(["Spring", dt.date(2026, 1, 5), True])
    dates.append(["Summer | short", dt.datetime(2026, 4, 20, 8, 30), False])
    wb.create_sheet("Empty")
    staff = wb.create_sheet("Staff")
    staff.append(["Name", "Ext"])
    staff.append(["Ana Quokkasheet", 4411])
    return _save(wb)


def test_each_sheet_is_a_section_with_its_used_range_as_a_table():
    doc = load_bytes("fees.xlsx", _workbook())
    assert doc.format == "xlsx" and doc.title == "Fees"
    sections = split_sections(doc.text, doc.title)
    assert [s.path for s in sections] == [["Fees"], ["Term dates"], ["Staff"]]  # the empty sheet has none
    assert sections[0].body == ("Fee schedule 2026\n\n| Item | Price | Share |\n|---|---|---|\n"
                                "| Lunch | $4.50 | 25.0% |\n| Trip | $1,234.50 | 12.5% |")
    assert sections[1].body == ("| Term | Starts | Open |\n|---|---|---|\n| Spring | 2026-01-05 | TRUE |\n"
                                "| Summer / short | 2026-04-20 08:30 | FALSE |")
    assert sections[2].body == "| Name | Ext |\n|---|---|\n| Ana Quokkasheet | 4411 |"


def test_a_large_sheet_is_capped_and_says_so(monkeypatch):
    monkeypatch.setattr(office, "XLSX_MAX_ROWS", 50)
    monkeypatch.setattr(office, "XLSX_MAX_COLUMNS", 4)
    wb = Workbook()
    sheet = wb.active
    sheet.title = "Big"
    sheet.append([f"col{c}" for c in range(6)])
    for r in range(200):
        sheet.append([f"r{r}c{c}" for c in range(6)])
    doc = load_bytes("big.xlsx", _save(wb))
    table = [ln for ln in doc.text.splitlines() if ln.startswith("|")]
    assert table[0] == "| col0 | col1 | col2 | col3 |" and len(table) == 2 + 49
    assert "(2 more columns not read)" in doc.text
    assert "(only the first 50 rows of this sheet were read)" in doc.text


def test_an_empty_workbook_is_refused():
    wb = Workbook()
    wb.create_sheet("Also empty")
    with pytest.raises(LoadError, match="^empty workbook$"):
        load_bytes("blank.xlsx", _save(wb))


def test_damaged_mislabelled_and_old_files_get_a_clear_reason(monkeypatch):
    with pytest.raises(LoadError, match="unreadable Word document"):
        load_bytes("broken.docx", b"PK\x03\x04 this is not really a zip file")
    with pytest.raises(LoadError, match="unreadable Word document"):
        load_bytes("sheet.docx", _workbook())  # a workbook named .docx
    with pytest.raises(LoadError, match="old binary Office file"):
        load_bytes("legacy.docx", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(LoadError, match="old binary Office file"):
        load_bytes("legacy.doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(600))
    with pytest.raises(LoadError, match="Office lock file"):
        load_bytes("~$leave-policy.docx", b"\x05Alice" + bytes(150))
    monkeypatch.setattr(office, "OFFICE_MAX_UNPACKED", 10_000)
    with pytest.raises(LoadError, match="unpacks to"):
        load_bytes("leave-policy.docx", _policy_docx())


def test_a_package_without_a_usable_name_is_read_by_its_content():
    assert load_bytes("Budget", _workbook()).format == "xlsx"  # a Drive file named without a suffix
    assert load_bytes("Leave policy (final)", _policy_docx()).title == "Leave Policy"
    assert load_bytes("deck.bin", _deck()).format == "pptx"


def test_office_files_are_read_by_ingest_and_as_attachments(tmp_path):
    assert {".docx", ".pptx", ".xlsx"} <= SUPPORTED_SUFFIXES
    path = tmp_path / "leave-policy.docx"
    path.write_bytes(_policy_docx())
    assert load_document(path).text == load_bytes("x.docx", _policy_docx()).text
    for name in ("leave.docx", "deck.PPTX", "fees.xlsx"):
        assert attached.kind(name) == "readable"
    assert attached.kind("leave", DOCX_TYPE) == "readable"  # named by its declared type alone
    assert attached.kind("leave", "docx") == "readable"  # Slack's filetype
    doc = attached.read("leave", DOCX_TYPE, _policy_docx())
    assert doc.source == "leave" and "# Annual leave" in doc.text


@pytest.fixture
def cli_env(settings, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    return settings


def test_askdesk_ingest_makes_office_files_searchable(cli_env, tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "leave-policy.docx").write_bytes(_policy_docx())
    (kb / "q3.pptx").write_bytes(_deck())
    (kb / "fees.xlsx").write_bytes(_workbook())
    scanned = WordDocument()
    scanned.add_picture(io.BytesIO(_png()))
    (kb / "scan.docx").write_bytes(_save(scanned))
    (kb / "blank.xlsx").write_bytes(_save(Workbook()))
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(kb), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert sorted(report["updated"]) == ["fees.xlsx", "leave-policy.docx", "q3.pptx"]
    assert {(s["file"], s["reason"]) for s in report["skipped"]} == {
        ("scan.docx", "no text: the document holds only images (scanned?)"), ("blank.xlsx", "empty workbook")}

    for query, source, section, text in [
        ("zebraquokka leave", "leave-policy.docx", "Annual leave", "25 days of zebraquokka"),
        ("quokkadeck", "q3.pptx", "Slide 1: Quarterly update", "Notes: Mention the quokkadeck"),
        ("Quokkasheet extension", "fees.xlsx", "Staff", "| Ana Quokkasheet | 4411 |"),
    ]:
        result = runner.invoke(app, ["search", query, "--top-k", "1", "--json"])
        assert result.exit_code == 0, result.output
        hit = json.loads(result.stdout)[0]
        assert (hit["source"], hit["section"]) == (source, section) and text in hit["text"], hit
