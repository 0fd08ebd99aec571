"""Incremental ingestion (changed/removed rows, bad rows kept) and the two CLI commands."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from agent.facilities.ingest import ingest_facilities
from agent.facilities.schema import FacilitySearchArgs
from agent.facilities.search import search_facilities
from agent.runtime import Runtime
from tests.conftest import SAMPLE_FACILITIES

LINES = SAMPLE_FACILITIES.read_text(encoding="utf-8").splitlines()
HEADER = LINES[0]
AUSTIN = [line for line in LINES[1:] if ",AUSTIN," in line][:4]


async def test_incremental_reingest_updates_removes_and_keeps_bad_rows(settings, tmp_path):
    csv_path = tmp_path / "registry.csv"
    csv_path.write_text("\n".join([HEADER, *AUSTIN]) + "\n", encoding="utf-8")
    runtime = Runtime.open(settings)
    try:
        first = await ingest_facilities(runtime, csv_path)
        assert (first.added, first.loaded) == (4, 4)
        changed = AUSTIN[0].replace("Ebenezer Child Development Center", "Ebenezer Learning Center")
        broken = AUSTIN[1].replace(",N,Y,N,", ",N,?,N,", 1)
        assert broken != AUSTIN[1]
        csv_path.write_text("\n".join([HEADER, changed, broken, AUSTIN[2]]) + "\n", encoding="utf-8")
        second = await ingest_facilities(runtime, csv_path)
        assert (second.added, second.updated, second.unchanged, second.removed) == (0, 1, 1, 1)
        assert [e.line for e in second.errors] == [3]
        assert "line 3" in second.summary()
        left = await search_facilities(runtime, FacilitySearchArgs(city="Austin", limit=0))
        names = {h.name for h in left.facilities}
        assert "Ebenezer Learning Center" in names and len(names) == 3  # bad row's old version kept
    finally:
        await runtime.close()


def test_cli_ingest_and_facility_json(tmp_path, monkeypatch):
    from bot.cli import app

    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    csv_path = tmp_path / "small.csv"
    csv_path.write_text("\n".join([HEADER, *AUSTIN, "1,,x"]) + "\n", encoding="utf-8")
    runner = CliRunner()
    out = runner.invoke(app, ["ingest-facilities", str(csv_path)])
    assert out.exit_code == 0, out.output
    assert "4 of 5 rows loaded" in out.output and "line 6" in out.output

    out = runner.invoke(app, ["facility", "--json", "accredited centers within 3 miles of 78702"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["interpretation"] == "accredited · within 3 mi of 78702"
    assert [f["operation_number"] for f in data["facilities"]] == ["139", "5807"]  # sorted by distance
    assert data["facilities"][0]["distance_miles"] < data["facilities"][1]["distance_miles"] < 3

    out = runner.invoke(app, ["facility"])
    assert out.exit_code == 0 and "/facility infant care near 78702" in out.output
    out = runner.invoke(app, ["ingest-facilities", str(tmp_path / "absent.csv")])
    assert out.exit_code == 2 and "not a file" in out.output


async def test_store_down_gives_a_message_not_a_crash(tmp_path):
    from qdrant_client import AsyncQdrantClient

    from agent.config import Settings
    from agent.facilities.command import run_facility_command
    from agent.store.server import ServerStore

    url = "http://127.0.0.1:9"  # nothing listens there
    client = AsyncQdrantClient(url=url, check_compatibility=False)
    runtime = Runtime(settings=Settings(data_dir=tmp_path, qdrant_url=url), store=ServerStore(client, where=url))
    try:
        result = await run_facility_command(runtime, "infant care in Austin")
    finally:
        await runtime.close()
    assert "unavailable" in result.reply and result.results is None
