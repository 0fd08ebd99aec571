"""Small real PDFs for tests and benchmarks: one page per text, Helvetica, a correct xref table,
so pypdf (the loader askdesk ingests with) extracts the text back page by page."""

from __future__ import annotations


def _escape(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def make_pdf(pages: list[str], *, title: str | None = None) -> bytes:
    """A PDF whose page i shows the lines of `pages[i]`."""
    objects: list[bytes] = []
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(pages)))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    for i, text in enumerate(pages):
        lines = text.splitlines() or [""]
        ops = ["BT", "/F1 10 Tf", "12 TL", "50 780 Td"]
        for line in lines:
            ops.append(f"({_escape(line)}) Tj T*")
        ops.append("ET")
        stream = "\n".join(ops).encode("latin-1", "replace")
        objects.append(f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> "
                       f"/Contents {5 + 2 * i} 0 R >>".encode())
        objects.append(b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream")
    info = None
    if title:
        objects.append(f"<< /Title ({_escape(title)}) >>".encode())
        info = len(objects)
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for offset in offsets:
        out += f"{offset:010d} 00000 n \n".encode()
    trailer = f"<< /Size {len(objects) + 1} /Root 1 0 R" + (f" /Info {info} 0 R" if info else "") + " >>"
    out += f"trailer\n{trailer}\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def report_pages(count: int = 20, *, needle_page: int | None = None, needle: str = "") -> list[str]:
    """`count` pages of a plausible staff report (about 2,500 characters each); `needle` on one page."""
    pages = []
    for n in range(1, count + 1):
        lines = [f"Quarterly operations report - page {n}"]
        for k in range(1, 31):
            lines.append(f"Section {n}.{k}: staffing levels, training hours and site visits were reviewed "
                         f"for region {k % 7} as planned.")
        if n == needle_page:
            lines.insert(3, needle)
        pages.append("\n".join(lines))
    return pages
