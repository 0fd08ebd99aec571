"""Reading Office files: a 100-page .docx, a 100-slide .pptx and 100 pages' worth of .xlsx,
parsed by the loaders and cut by the chunker (embedding aside: bench_ingest.py measures that).

    .venv/bin/python bench/bench_office.py [--runs 5]

The files are generated here with the writer libraries (python-docx, python-pptx, openpyxl), so
the numbers need no fixture: a Word page is a heading, four ~110-word paragraphs and a bulleted
list, with a 12-row table every fifth page (about 3,300 characters); a slide is a title, five
bullets, a footer text box and speaker notes, with a table every fifth slide; a spreadsheet page is 50 rows of 6
columns, as 100 sheets and as one 5,000-row sheet. Each file is read `--runs` times and the
median is reported (target: at least 20 pages/s on a 2-core machine). The load average is
printed because the machines are shared: compare runs taken at similar load.
"""

from __future__ import annotations

import argparse
import io
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.knowledge.chunking import chunk_document  # noqa: E402
from agent.knowledge.loaders import load_bytes  # noqa: E402

PAGES = 100
WORDS = ("staff leave policy manager request approval days annual carry over payroll benefits office "
         "training schedule health safety visitor sign record review quarter budget team region "
         "training contract holiday closure attendance form system deadline").split()


def _sentence(rng: random.Random, n: int = 14) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + f" ({rng.randint(1, 9999):,})."


def _paragraph(rng: random.Random, sentences: int = 7) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def make_docx(pages: int = PAGES) -> bytes:
    from docx import Document

    rng = random.Random(1)
    d = Document()
    d.add_heading("Staff handbook", 0)
    for page in range(1, pages + 1):
        d.add_heading(f"Chapter {page}", 1 if page % 10 == 1 else 2)
        for _ in range(4):
            d.add_paragraph(_paragraph(rng))
        for _ in range(4):
            d.add_paragraph(_sentence(rng, 8), style="List Bullet")
        if page % 5 == 0:
            table = d.add_table(rows=12, cols=4)
            for r, row in enumerate(table.rows):
                for c, cell in enumerate(row.cells):
                    cell.text = f"Column {c}" if r == 0 else f"{rng.choice(WORDS)} {rng.randint(1, 999)}"
    out = io.BytesIO()
    d.save(out)
    return out.getvalue()


def make_pptx(slides: int = PAGES) -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    rng = random.Random(2)
    prs = Presentation()
    for n in range(1, slides + 1):
        if n % 5 == 0:
            slide = prs.slides.add_slide(prs.slide_layouts[5])
            table = slide.shapes.add_table(8, 4, Inches(0.5), Inches(1.5), Inches(9), Inches(4)).table
            for r in range(8):
                for c in range(4):
                    table.cell(r, c).text = f"Column {c}" if r == 0 else f"{rng.choice(WORDS)} {rng.randint(1, 999)}"
        else:
            slide = prs.slides.add_slide(prs.slide_layouts[1])
            frame = slide.placeholders[1].text_frame
            frame.text = _sentence(rng, 8)
            for _ in range(4):
                frame.add_paragraph().text = _sentence(rng, 8)
        slide.shapes.title.text = f"Slide topic {n}: {rng.choice(WORDS)}"
        footer = slide.shapes.add_textbox(Inches(0.5), Inches(6.8), Inches(9), Inches(0.5))
        footer.text_frame.text = f"Source: {rng.choice(WORDS)} report {rng.randint(2020, 2026)}"
        slide.notes_slide.notes_text_frame.text = _paragraph(rng, 3)
    out = io.BytesIO()
    prs.save(out)
    return out.getvalue()


def make_xlsx(sheets: int, rows: int) -> bytes:
    from openpyxl import Workbook

    rng = random.Random(3)
    wb = Workbook()
    wb.remove(wb.active)
    for s in range(sheets):
        sheet = wb.create_sheet(f"Sheet {s + 1}")
        sheet.append(["Name", "Team", "Region", "Days", "Rate", "Note"])
        for _ in range(rows - 1):
            sheet.append([f"{rng.choice(WORDS).title()} {rng.randint(1, 999)}", rng.choice(WORDS), rng.choice(WORDS),
                          rng.randint(0, 40), round(rng.uniform(10, 90), 2), _sentence(rng, 5)])
        for row in sheet.iter_rows(min_row=2, min_col=5, max_col=5):
            row[0].number_format = '"$"#,##0.00'
    out = io.BytesIO()
    wb.save(out)
    return out.getvalue()


def measure(name: str, data: bytes, runs: int) -> dict:
    times: list[float] = []
    chunks = chars = 0
    for _ in range(runs):
        started = time.perf_counter()
        doc = load_bytes(name, data)
        pieces = chunk_document(doc.text, title=doc.title)
        times.append(time.perf_counter() - started)
        chunks, chars = len(pieces), len(doc.text)
    median = statistics.median(times)
    return {"median": median, "min": min(times), "chunks": chunks, "chars": chars, "pages_per_s": PAGES / median}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    cases: list[tuple[str, str, Callable[[], bytes]]] = [
        ("handbook.docx", f".docx, {PAGES} pages", make_docx),
        ("deck.pptx", f".pptx, {PAGES} slides", make_pptx),
        ("sheets.xlsx", f".xlsx, {PAGES} sheets x 50 rows", lambda: make_xlsx(PAGES, 50)),
        ("long.xlsx", f".xlsx, 1 sheet x {PAGES * 50:,} rows", lambda: make_xlsx(1, PAGES * 50)),
    ]
    load = os.getloadavg()[0]
    lines = ["| file | size | text chars | chunks | median s | best s | pages/s |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for name, label, make in cases:
        data = make()
        r = measure(name, data, args.runs)
        lines.append(f"| {label} | {len(data) / 1e3:,.0f} KB | {r['chars']:,} | {r['chunks']:,} | "
                     f"{r['median']:.2f} | {r['min']:.2f} | {r['pages_per_s']:.0f} |")
    print(f"loaders + chunking (no embedding), median of {args.runs} runs; {os.cpu_count()} CPUs, "
          f"load average {load:.1f}; target >= 20 pages/s\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
