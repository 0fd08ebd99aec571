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


async def test_a_streamed_answer_printed_to_a_file_ends_its_line_before_the_sources(llm_server, tmp_path, monkeypatch):
    """`askdesk ask … > file` (or a piped `chat`) with a model streaming: rich's live view drew
    the answer's last line without its newline and padded to the console width, so the sources
    ran into it ("depends on income [2].      Sources"). Off a terminal each block now has its own
    lines and no padding."""
    import io

    from rich.console import Console

    from agent.config import Settings
    from agent.turn.service import Askdesk
    from bot.commands import chat
    from tests.test_cli_chat import DOC as KB_DOC, FIRST_Q

    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / KB_DOC).write_text("# PSOC chart\n\nA family of 3 making $2,890 a month pays $41 a week.\n", encoding="utf-8")
    settings = Settings(data_dir=tmp_path / "data", agent_model="openai/gpt-4.1-mini",
                        router_model="openai/gpt-4.1-mini")
    from agent.knowledge.ingest import ingest
    from agent.runtime import Runtime

    runtime = Runtime.open(settings)
    try:
        await ingest(runtime, [kb])
    finally:
        await runtime.close()
    answer = "A family of 3 making $2,890 a month pays $41 a week; the amount depends on income [1]."
    llm_server.set_stream_pace("openai", first_token=0.0, tokens_per_s=400)
    llm_server.script("openai", {"step": {"kind": "final_answer", "answer": answer,
                                          "references": [{"source": KB_DOC}], "confidence": 0.9}})
    out = io.StringIO()  # not a terminal
    console = Console(file=out, width=100, highlight=False, soft_wrap=False)
    assert not console.is_terminal
    monkeypatch.setattr(chat, "_console", lambda stderr=False: console)
    service = Askdesk.create(settings)
    try:
        await chat._chat_loop(settings, "t-piped", [FIRST_Q], service=service)
    finally:
        await service.close()
    assert len(llm_server.requests) == 1 and llm_server.requests[0].body.get("stream") is True
    lines = out.getvalue().splitlines()
    assert "depends on income [1]." in lines[lines.index("Sources") - 1]  # the answer's last line, then the sources
    assert lines.count("Sources") == 1 and lines.count("askdesk>") == 1
    assert not [line for line in lines if line != line.rstrip()]  # no padding to the console's width
    assert "\x1b" not in out.getvalue()
