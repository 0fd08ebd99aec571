"""`askdesk registry list|ingest|search`, the `ingest-facilities` / `facility` shortcuts over
the demo's declaration, and a registry ingest handed to the running bot (bot/admin)."""

from __future__ import annotations

import json
import shutil

from typer.testing import CliRunner

from agent.capabilities.registry import registry_capabilities
from agent.config import Settings
from agent.runtime import Runtime
from bot.cli import app
from bot.commands.serve import start_admin_channel
from tests.conftest import REPO
from tests.test_store_concurrency import cli_env, run_cli

HR = REPO / "examples" / "hr-it-handbook"
OFFICE_YAML = HR / "registries" / "office.yaml"
OFFICES = HR / "offices.csv"
DEMO_YAML = REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml"


def invoke(*argv: str):
    return CliRunner().invoke(app, list(argv))


def test_ingest_copies_the_declaration_then_list_and_search_find_it(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(data))
    out = invoke("registry", "list")
    assert out.exit_code == 0 and "No registry is declared" in out.output

    out = invoke("registry", "ingest", "office", str(OFFICES), "--declaration", str(OFFICE_YAML))
    assert out.exit_code == 0, out.output
    assert out.output.strip() == ("offices.csv -> collection 'offices': 20 of 20 rows loaded "
                                  "(20 added, 0 updated, 0 unchanged, 0 removed).")
    copy = data / "registries" / "office.yaml"
    assert copy.read_text(encoding="utf-8") == OFFICE_YAML.read_text(encoding="utf-8")
    again = invoke("registry", "ingest", "office", str(OFFICES))  # found in the data dir now
    assert again.exit_code == 0 and "(0 added, 0 updated, 20 unchanged, 0 removed)" in again.output

    listed = invoke("registry", "list")
    assert listed.exit_code == 0
    assert "office  /office  Northwind office locations  collection 'offices': 20 records" in listed.output

    found = invoke("registry", "search", "office", "--json", "bike storage within 30 miles of 80302")
    assert found.exit_code == 0, found.output
    data_json = json.loads(found.output)
    assert data_json["interpretation"] == "bike storage · within 30 mi of 80302"
    assert [o["office_id"] for o in data_json["offices"]] == ["BOU-1", "DEN-1"]
    plain = invoke("registry", "search", "office", "parking", "in", "Austin")
    assert plain.exit_code == 0 and plain.output.startswith("Offices: parking · in Austin\n2 match(es):")
    assert invoke("registry", "search", "office").output.startswith("Find a Northwind office.")


def test_errors_and_exit_codes(tmp_path, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    unknown = invoke("registry", "ingest", "office", str(OFFICES))
    assert unknown.exit_code == 2 and "no registry named 'office' is declared (declared: none)" in unknown.output
    wrong = invoke("registry", "ingest", "offices", str(OFFICES), "--declaration", str(OFFICE_YAML))
    assert wrong.exit_code == 2 and "declares registry 'office', not 'offices'" in wrong.output
    broken = tmp_path / "office.yaml"
    broken.write_text(OFFICE_YAML.read_text(encoding="utf-8").replace("type: geo", "type: globe"), encoding="utf-8")
    bad = invoke("registry", "ingest", "office", str(OFFICES), "--declaration", str(broken))
    assert bad.exit_code == 2 and "office.yaml: fields.location: Input tag 'globe'" in bad.output
    assert not (tmp_path / "data" / "registries" / "office.yaml").exists()  # a broken declaration is not kept

    no_file = invoke("registry", "ingest", "office", str(tmp_path / "no.csv"), "--declaration", str(OFFICE_YAML))
    assert no_file.exit_code == 2 and no_file.output == f"error: {tmp_path / 'no.csv'}: no such file or directory\n"
    assert not (tmp_path / "data" / "registries" / "office.yaml").exists()  # checked before anything is kept
    assert invoke("registry", "ingest", "office", str(OFFICES), "--declaration", str(OFFICE_YAML)).exit_code == 0
    rows = tmp_path / "rows.csv"
    lines = OFFICES.read_text(encoding="utf-8").splitlines()
    rows.write_text("\n".join([lines[0], lines[1].replace(",850,", ",many,"), lines[2]]) + "\n", encoding="utf-8")
    partly = invoke("registry", "ingest", "office", str(rows))
    assert partly.exit_code == 0 and "1 of 2 rows loaded" in partly.output
    assert "line 2: desks: expected a whole number, got 'many'" in partly.output
    rows.write_text("\n".join([lines[0], lines[1].replace(",850,", ",many,")]) + "\n", encoding="utf-8")
    assert invoke("registry", "ingest", "office", str(rows)).exit_code == 1  # nothing loaded
    rows.write_text("name,city\nX,Austin\n", encoding="utf-8")
    missing = invoke("registry", "ingest", "office", str(rows))
    assert missing.exit_code == 2 and "missing required column(s) ['office_id']" in missing.output
    assert invoke("registry", "search", "equipment", "x").exit_code == 2


def test_the_facility_shortcuts_use_the_declared_registry_else_the_demos(tmp_path, monkeypatch):
    data = tmp_path / "data"
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(data))
    lines = (REPO / "examples" / "texas-childcare" / "facilities.csv").read_text(encoding="utf-8").splitlines()
    small = tmp_path / "small.csv"
    small.write_text("\n".join([lines[0], *[line for line in lines[1:] if ",AUSTIN," in line][:3]]) + "\n",
                     encoding="utf-8")
    out = invoke("ingest-facilities", str(small))  # no facility registry declared: the demo's declaration
    assert out.exit_code == 0 and "3 of 3 rows loaded" in out.output
    assert invoke("facility", "accredited in Austin").output.startswith("Facilities: accredited · in Austin")
    own = data / "registries" / "facility.yaml"  # the demo's declaration was installed there
    own.write_text(DEMO_YAML.read_text(encoding="utf-8").replace("plural: facilities", "plural: providers"),
                   encoding="utf-8")
    assert invoke("facility", "accredited in Austin").output.startswith("Providers: accredited · in Austin")


def test_the_facility_shortcut_on_a_data_dir_without_the_registry_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    out = invoke("facility", "infant care near 78702")
    assert out.exit_code == 1 and "not loaded" in out.output and "ingest-facilities" in out.output


async def test_a_registry_ingest_is_handed_to_the_running_bot(tmp_path):
    """While `askdesk serve` holds the store, `askdesk registry ingest` (another process) hands the
    job over; the bot's own registry object sees the new records and places at once."""
    data = tmp_path / "data"
    (data / "registries").mkdir(parents=True)
    shutil.copy(OFFICE_YAML, data / "registries" / "office.yaml")
    settings = Settings(data_dir=data)
    runtime = Runtime.open(settings)
    (serving,) = registry_capabilities(runtime)
    channel = await start_admin_channel(settings, runtime)
    try:
        assert not (await serving.run_command("office", "parking in Austin")).records  # not loaded yet
        code, out, err = await run_cli(["registry", "ingest", "office", str(OFFICES)], cli_env(data), timeout=120)
        after = await serving.run_command("office", "parking in Austin")
    finally:
        if channel is not None:
            await channel.close()
        await runtime.close()
    assert code == 0 and "the running bot" in err and "Traceback" not in out + err, err
    assert "20 of 20 rows loaded (20 added" in out
    assert {r.id for r in after.records} == {"AUS-HQ", "AUS-EAST"}
