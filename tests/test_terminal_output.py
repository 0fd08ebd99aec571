"""Control characters from file names and documents never reach the terminal: `askdesk ingest`
and `askdesk search` (the real console script) strip terminal escape codes, C1 controls and
bidi overrides from what they print; `--json` keeps the data, escaped. Before: a document could
clear the screen or retitle the window of whoever searched it."""

from __future__ import annotations

import json
import re

from bot.printable import json_safe, printable
from tests.test_store_concurrency import cli_env, run_cli

ESC_NAME = "evil\x1b]0;pwned\x07name.md"  # sets the terminal's title
DOC = ("# Payroll \x1b[2J\x1b[Hcalendar\n\nThe payroll calendar\x9b31m lists pay days \u202eevil\u202c for "
       "zebrafinch staff.\x7f\n")
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def test_printable_and_json_safe():
    assert printable("a\x1b[31mb\x9bc\u202ed\te\nf") == "a[31mbcdef"
    assert printable("a\tb\nc\x1b", multiline=True) == "a\tb\nc"
    text = json.dumps({"t": "x\x1b\x7f\x9b\u202ey"}, ensure_ascii=False)
    assert not UNSAFE.search(json_safe(text)) and json.loads(json_safe(text)) == {"t": "x\x1b\x7f\x9b\u202ey"}


async def test_ingest_and_search_print_no_control_characters(tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ESC_NAME).write_text(DOC, encoding="utf-8")
    (kb / "empty\x1b[5mblink.md").write_text("  \n", encoding="utf-8")  # skipped: named on stderr
    env = cli_env(tmp_path / "data")
    runs = [await run_cli(args, env, timeout=240) for args in (
        ["ingest", str(kb)], ["ingest", str(kb), "--json"], ["search", "zebrafinch payroll calendar"],
        ["search", "zebrafinch payroll calendar", "--json"])]
    for code, out, err in runs:
        assert code in (0, 1) and "Traceback" not in err, err
        assert not UNSAFE.search(out + err), repr(UNSAFE.findall(out + err))
    (_, out, err), (_, json_out, _), (_, found, _), (_, found_json, _) = runs
    assert "skipped empty[5mblink.md: empty file" in err and "1 files" in out
    assert "evil]0;pwnedname.md" in found and "The payroll calendar31m lists pay days evil for" in found
    rows = json.loads(found_json)  # the JSON keeps the data exactly, escaped
    assert rows[0]["source"] == ESC_NAME and "\x9b31m" in rows[0]["text"]
    assert json.loads(json_out)["unchanged"] == [ESC_NAME]


async def test_answers_print_no_control_characters_and_no_console_markup(tmp_path):
    """`askdesk ask` (drawn with rich) and `ask --json` quote the document and name its file:
    neither may carry a control code to the terminal, and a title cannot inject rich markup."""
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / ESC_NAME).write_text(DOC.replace("# Payroll", "# Payroll [bold red]LOUD[/bold red]"), encoding="utf-8")
    env = cli_env(tmp_path / "data")
    assert (await run_cli(["ingest", str(kb)], env, timeout=240))[0] == 0
    question = "when are zebrafinch staff pay days on the payroll calendar?"
    (code, out, err), (json_code, json_out, _) = [await run_cli(args, env, timeout=240) for args in (
        ["ask", question], ["ask", question, "--json"])]
    assert code == 0 and json_code == 0 and "Traceback" not in err, err
    assert not UNSAFE.search(out + err + json_out), repr(UNSAFE.findall(out + err + json_out))
    assert "lists pay days" in out and "[bold red]LOUD[/bold red]" in out  # shown as written, not styled
    assert "\x1b" in json.loads(json_out)["answer"]  # the JSON keeps the data, escaped
