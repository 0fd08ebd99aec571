"""Text files in UTF-16 or UTF-32 with a byte-order mark (what Notepad's "Unicode" and many
Windows exports write) are read, not skipped as binary; a real binary file still is."""

from __future__ import annotations

import pytest

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.knowledge.loaders import LoadError, load_document
from agent.knowledge.search import search
from agent.runtime import Runtime
from tests.crash_child import EMBEDDER, HashEmbedder

TEXT = "# Horarios de atención\n\nLa oficina abre a las 8:00 — café ☕ y ñandú incluidos.\n"
WIDE = ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
BOM = {"utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff", "utf-32-le": b"\xff\xfe\x00\x00",
       "utf-32-be": b"\x00\x00\xfe\xff"}


def wide(text: str, encoding: str) -> bytes:
    return BOM[encoding] + text.encode(encoding)


@pytest.mark.parametrize("encoding", WIDE)
@pytest.mark.parametrize("suffix", [".md", ".txt"])
def test_wide_text_with_a_byte_order_mark_is_read(tmp_path, encoding, suffix):
    path = tmp_path / f"horarios{suffix}"
    path.write_bytes(wide(TEXT, encoding))
    doc = load_document(path)
    assert doc.text == TEXT and "\ufeff" not in doc.text
    if suffix == ".md":
        assert doc.title == "Horarios de atención"


@pytest.mark.parametrize("encoding", WIDE)
def test_wide_html_with_a_byte_order_mark_is_read(tmp_path, encoding):
    path = tmp_path / "page.html"
    path.write_bytes(wide("<html><head><title>Café</title></head><body><h1>Ñandú</h1><p>Abre a las 8.</p>"
                          "</body></html>", encoding))
    doc = load_document(path)
    assert doc.title == "Café" and "# Ñandú" in doc.text and "Abre a las 8." in doc.text


def test_broken_wide_text_and_real_binaries_are_still_refused(tmp_path):
    odd = tmp_path / "odd.txt"
    odd.write_bytes(b"\xff\xfe" + "abc".encode("utf-16-le") + b"\x00\xd8")  # a lone surrogate half
    with pytest.raises(LoadError, match="not valid UTF-16"):
        load_document(odd)
    png = tmp_path / "image.txt"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    with pytest.raises(LoadError, match="binary"):
        load_document(png)


async def test_a_utf16_file_is_ingested_and_found(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "horarios.txt").write_bytes(wide(TEXT, "utf-16-le"))
    runtime = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False))
    runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    try:
        report = await ingest(runtime, [kb])
        hits = await search(runtime, "ñandú", mode="sparse")
    finally:
        await runtime.close()
    assert report.skipped == [] and report.updated == ["horarios.txt"]
    assert hits and "ñandú" in hits[0].text
