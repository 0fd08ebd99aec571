"""Ingest under hostile or unlucky input (issue 12): long files re-ingested, FIFOs and device
files, oversized files, an empty collection name, summaries that add up, progress without a
terminal, PDF warnings, facility coordinates. Each test reproduced its fault before the fix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from agent.config import Settings
from agent.knowledge import ingest as ingest_module
from agent.knowledge.ingest import ingest
from agent.knowledge.store import StoreError
from bot.cli import app
from tests.knowledge_fixtures import open_runtime
from tests.test_knowledge_ingest import _minimal_pdf


def _long_markdown(sections: int) -> str:
    return "# Long handbook\n\n" + "\n\n".join(
        f"## Section {i}\n\nRule {i}: staff file form {i} within {i % 9 + 1} days of the event." for i in range(sections))


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture
def cli_env(settings, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    return settings


async def test_reingest_of_a_file_longer_than_a_write_batch_writes_nothing(tmp_path, monkeypatch):
    """Stored n_chunks was the size of the write batch (64), so a longer file never looked
    current: 'updated' and re-embedded on every run. A batch of 4 shows it on a small file."""
    monkeypatch.setattr(ingest_module, "UPSERT_BATCH", 4)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(_long_markdown(11), encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", embedding_cache=False, chunk_chars=200, chunk_overlap=0)
    async with open_runtime(settings) as rt:
        first = await ingest(rt, [docs])
        assert first.updated == ["handbook.md"] and first.chunks > 2 * ingest_module.UPSERT_BATCH
        points, _ = await rt.store.scroll("kb", limit=1000, with_payload=True)
        assert {p.payload["n_chunks"] for p in points} == {first.chunks}

        second = await ingest(rt, [docs])
        assert second.updated == [] and second.unchanged == ["handbook.md"]
        assert second.chunks_written == 0 and second.embedded == 0


@pytest.mark.timeout(60)
async def test_fifo_and_device_files_are_skipped_by_name(settings, tmp_path):
    """A FIFO in a folder blocked ingest forever; /dev/zero was read until MemoryError."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "policy.md").write_text("# Policy\n\nThe quokka rule applies on Fridays.\n", encoding="utf-8")
    os.mkfifo(docs / "pipe.md")
    async with open_runtime(settings) as rt:
        report = await ingest(rt, [docs, "/dev/zero"])
    reasons = dict(report.skipped)
    assert reasons == {"pipe.md": "not a regular file (a FIFO)", "zero": "not a regular file (a character device)"}
    assert report.updated == ["policy.md"] and report.files == 1


async def test_files_over_the_size_cap_are_skipped_with_a_clear_message(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "small.md").write_text("# Small\n\nA short note about quokkas.\n", encoding="utf-8")
    (docs / "huge.txt").write_text("word " * 3000, encoding="utf-8")  # 15 kB
    settings = Settings(data_dir=tmp_path / "data", max_file_mb=0.01)  # 10 kB
    async with open_runtime(settings) as rt:
        report = await ingest(rt, [docs])
    (reason,) = [r for f, r in report.skipped if f == "huge.txt"]
    assert "0.0 MB is over the 0.01 MB limit (ASKDESK_MAX_FILE_MB)" in reason
    assert report.updated == ["small.md"]


async def test_summary_counts_files_and_skipped_apart(settings, tmp_path):
    """'files' counted a file with headings but no text both as a file and as skipped."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha text about quokkas.\n", encoding="utf-8")
    (docs / "b.md").write_text("# B\n\nBeta text about wombats.\n", encoding="utf-8")
    (docs / "blank.html").write_text("<html><body><script>x()</script></body></html>", encoding="utf-8")
    (docs / "empty.md").write_text("", encoding="utf-8")
    (docs / "headings.md").write_text("# Title only\n\n## Nothing under it\n", encoding="utf-8")
    async with open_runtime(settings) as rt:
        first = await ingest(rt, [docs])
        second = await ingest(rt, [docs])
    for report in (first, second):
        assert report.files == len(report.updated) + len(report.unchanged) == 2
        assert sorted(f for f, _ in report.skipped) == ["blank.html", "empty.md", "headings.md"]
    assert "2 files, " in second.summary() and "3 skipped" in second.summary()


async def test_empty_collection_name_is_refused(settings, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    async with open_runtime(settings) as rt:
        with pytest.raises(StoreError, match="collection name is empty"):
            await ingest(rt, [docs], collection="")
        assert not await rt.store.collection_exists("kb")


def test_cli_rejects_an_empty_collection_and_writes_nothing(cli_env, tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nAlpha.\n", encoding="utf-8")
    for command in (["ingest", str(docs)], ["search", "alpha"]):
        result = _run(*command, "--collection", "")
        assert result.exit_code == 2
        assert result.stderr.strip() == (
            "error: --collection is empty: give a collection name, or leave the option out for the default")
    assert not (cli_env.data_dir / "edge" / "kb").exists() and not (cli_env.data_dir / "qdrant").exists()


def test_cli_without_a_terminal_prints_progress_lines_and_no_pdf_warnings(cli_env, tmp_path):
    """Rich bars print nothing when stdout is not a terminal; pypdf printed its warnings
    ('incorrect startxref pointer') straight to stderr. A real process with pipes: in-process,
    pytest's log capture would swallow the warnings."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "handbook.md").write_text(_long_markdown(3), encoding="utf-8")
    pdf = _minimal_pdf(["Quokka Reimbursement Policy", "Staff may claim $1,234.56 per year."])
    (docs / "policy.pdf").write_bytes(pdf.replace(b"startxref\n", b"startxref\n9"))  # a wrong xref offset
    command = [sys.executable, "-c", "from bot.cli import main; main()", "ingest", str(docs)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=240, env=dict(os.environ))
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "ingest: 0/2 files, 0 s"  # chunks are counted once the files are read: no "0/0 chunks"
    assert re.fullmatch(r"ingest: \d/2 files, 0/[1-9]\d* chunks, \d+ s", lines[1]), lines
    assert all(line.startswith("ingest: ") for line in lines), lines  # nothing else: no pypdf chatter
    assert result.stdout.startswith("Ingested into 'kb': 2 files, ")

    as_json = _run("ingest", str(docs), "--json")
    assert json.loads(as_json.stdout)["unchanged"] == ["handbook.md", "policy.pdf"]


def test_bad_longitude_is_named_as_longitude():
    from tests.test_registry_rows import HEADER, _row, schema

    def lon(row: str, value: str) -> str:
        return row.rsplit(",", 1)[0] + "," + value

    rows = [HEADER, lon(_row("1"), "west"), _row("2", lat="95"), lon(_row("3"), ""), _row("4")]
    parsed = schema().parse_text("\n".join(rows), source="r.csv")
    assert [e.message for e in parsed.errors] == [
        "longitude: not a number: 'west'",
        "latitude: out of range (-90 to 90): '95'",
        "latitude/longitude: has only one of latitude and longitude",
    ]
    assert [f["operation_number"] for f in parsed.records] == ["4"]
