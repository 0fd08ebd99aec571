"""The `askdesk` command line follows the conventions scripts rely on (issue 31): `-h` wherever
`--help` works, `--version`, flags shown as flags in help, ONE `error: …` line and exit code 2
for every bad path or argument (typer's own usage errors included: no usage block, no rich box,
no traceback), and no library warnings at start-up.

The table of bad arguments runs through typer's CliRunner on the real app (a subprocess per row
would cost seconds each); a few runs go through the installed `askdesk` script as a subprocess,
as a user or a script runs it, including `askdesk serve teams`, whose Teams SDK warns on import.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
import warnings
from importlib.metadata import version
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from bot.cli import app, quiet_warnings

GUID = "00000000-0000-0000-0000-000000000001"


def askdesk_command() -> list[str]:
    exe = Path(sys.executable).with_name("askdesk")
    return [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]


def child_env(**extra: str) -> dict[str, str]:
    """The test's environment (conftest cleared provider keys and ASKDESK_*), with no warning
    options of its own: the entry point's filters are what is tested."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k != "PYTHONWARNINGS"}
    env.update(PYTHONIOENCODING="utf-8", **extra)
    return env


def run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([*askdesk_command(), *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def data_dir(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


# --- the real console script ------------------------------------------------------------------


def test_version_help_and_a_bad_path_through_the_installed_script(tmp_path):
    env = child_env(ASKDESK_DATA_DIR=str(tmp_path / "data"))
    shown = run(["--version"], env)
    assert (shown.returncode, shown.stdout, shown.stderr) == (0, f"askdesk {version('askdesk')}\n", "")

    helped = run(["ask", "-h"], env)
    assert helped.returncode == 0 and helped.stderr == ""
    assert helped.stdout.startswith("Usage: askdesk ask [OPTIONS]")
    assert re.search(r"^  --json +Print", helped.stdout, re.M)  # a flag, not `--json <bool>`

    missing = run(["ingest", str(tmp_path / "nowhere")], env)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == f"error: {tmp_path / 'nowhere'}: no such file or directory\n"
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_serve_starts_without_library_warnings(tmp_path):
    """`askdesk serve teams` (dev mode, an empty data dir) up to "ready", then SIGTERM: stderr
    holds askdesk's own lines, and no `…Warning:` line of a library (without the entry point's
    filters the Teams SDK prints an ExperimentalWarning on import: PYTHONWARNINGS=default shows it)."""
    env = child_env(ASKDESK_DATA_DIR=str(tmp_path / "data"), ASKDESK_TEAMS_DEV_MODE="true",
                    ASKDESK_TEAMS_PORT=str(_free_port()))
    proc = subprocess.Popen([*askdesk_command(), "serve", "teams"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if line.startswith("askdesk: ready"):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(60), "\n".join(lines)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
        reader.join(10)
    assert proc.returncode == 0, "\n".join(lines)
    assert any("Teams bot listening" in line for line in lines)
    warned = [line for line in lines if re.search(r"\b\w*Warning\b", line) or "in preview" in line]
    assert warned == [], "\n".join(lines)


def test_the_filters_are_narrow_and_give_way_to_the_users_own(monkeypatch):
    monkeypatch.setattr(sys, "warnoptions", [])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_warnings()
        warnings.warn_explicit("X is in preview and may change in the future. Diagnostic: ExperimentalTeamsX",
                               FutureWarning, "html_widget.py", 44, module="microsoft_teams.apps.utils.html_widget")
        warnings.warn_explicit("The bot client is deprecated", DeprecationWarning, "api_client.py", 74,
                               module="microsoft_teams.api.clients.api_client")
        warnings.warn_explicit("Failed to obtain server version.", UserWarning, "qdrant_remote.py", 159,
                               module="qdrant_client.qdrant_remote")
        # what stays: askdesk's own warnings, another library's, other qdrant-client notes
        warnings.warn_explicit("askdesk's own", UserWarning, "reply.py", 1, module="bot.slack.reply")
        warnings.warn_explicit("Api key is used with an insecure connection.", UserWarning, "qdrant_remote.py", 1,
                               module="qdrant_client.qdrant_remote")
        warnings.warn_explicit("something", FutureWarning, "x.py", 1, module="pandas.core")
    assert [str(w.message) for w in seen] == ["askdesk's own", "Api key is used with an insecure connection.",
                                              "something"]

    monkeypatch.setattr(sys, "warnoptions", ["default"])  # -W default / PYTHONWARNINGS: the user decides
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        quiet_warnings()
        warnings.warn_explicit("The bot client is deprecated", DeprecationWarning, "api_client.py", 74,
                               module="microsoft_teams.api.clients.api_client")
    assert len(seen) == 1


# --- every command, through the app -------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(app, list(args))


def one_error_line(result) -> str:
    """The single `error: …` line of a usage error (exit code 2, nothing on stdout)."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert result.stdout == "", result.stdout
    assert "Traceback" not in result.stderr and "╭" not in result.stderr and "Usage:" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


def bad_paths(tmp: Path) -> list[tuple[list[str], str]]:
    nowhere, no_dir = tmp / "nowhere", tmp / "no-dir"
    missing = f"error: {nowhere}: no such file or directory"
    return [
        (["ingest", str(nowhere)], missing),
        (["ingest", str(tmp), str(nowhere)], missing),  # one bad path of several: nothing is ingested
        (["ingest-facilities", str(nowhere)], missing),
        (["registry", "ingest", "office", str(nowhere)], missing),
        (["registry", "ingest", "office", str(tmp / "rows.csv"), "--declaration", str(nowhere)], missing),
        (["eval", str(nowhere)], missing),
        (["eval", str(tmp)], f"error: {tmp} is not a file"),
        (["demo", "--examples", str(nowhere)], missing),
        (["demo", "--examples", str(tmp / "rows.csv")], f"error: {tmp / 'rows.csv'} is not a directory"),
        (["teams", "package", "--bot-id", GUID, "--template", str(nowhere)], missing),
        (["teams", "package", "--bot-id", GUID, "--out", str(tmp)], f"error: {tmp} is a directory: give a file name"),
        (["report", "--html", str(no_dir / "report.html")], f"error: {no_dir}: no such directory"),
    ]


BAD_ARGUMENTS: list[tuple[list[str], str]] = [
    (["ask", ""], 'error: the question is empty: askdesk ask "your question"'),
    (["ask", "   "], 'error: the question is empty: askdesk ask "your question"'),
    (["search", " "], 'error: the query is empty: askdesk search "what to look for"'),
    (["ask"], "error: missing argument 'question' (see 'askdesk ask --help')"),
    (["ask", "who is eligible?", "--jsn"], "error: no such option: --jsn (Possible options: --json) "
                                           "(see 'askdesk ask --help')"),
    (["search", "x", "--top-k", "0"], "error: invalid value for '--top-k': "),
    (["search", "x", "--mode", "fuzzy"], "error: unknown --mode 'fuzzy': use hybrid, dense or sparse"),
    (["search", "x", "--collection", ""], "error: --collection is empty"),
    (["bogus"], "error: no such command 'bogus' (see 'askdesk --help')"),
    (["teams", "package"], "error: missing option '--bot-id' (see 'askdesk teams package --help')"),
    (["teams", "package", "--bot-id", "x"], "error: --bot-id 'x' is not a Microsoft Entra app id"),
    (["serve", "bogus"], "error: unknown surface 'bogus'"),
    (["report", "--since", "yesterday"], "error: --since takes"),
    (["registry", "search", "nothing", "x"], "error: no registry named 'nothing' is declared"),
    (["learned", "remove", "nothing.md"], "error: no learned answer named nothing.md"),
]


def test_every_bad_path_is_one_line_with_exit_code_2(data_dir, tmp_path):
    (tmp_path / "rows.csv").write_text("name\nx\n", encoding="utf-8")
    for args, expected in bad_paths(tmp_path):
        assert one_error_line(invoke(*args)) == expected, args
    assert not (data_dir / "registries").exists()  # nothing was kept by a command that failed


@pytest.mark.parametrize("args,expected", BAD_ARGUMENTS, ids=[" ".join(a) or "-" for a, _ in BAD_ARGUMENTS])
def test_every_bad_argument_is_one_line_with_exit_code_2(data_dir, args, expected):
    assert one_error_line(invoke(*args)).startswith(expected)


def command_paths() -> list[list[str]]:
    """Every command and group of the app, the app itself first."""
    found: list[list[str]] = []

    def walk(command, path: list[str]) -> None:
        found.append(path)
        for name, sub in sorted(getattr(command, "commands", {}).items()):
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return found


def test_dash_h_is_help_everywhere_and_flags_read_as_flags():
    paths = command_paths()
    assert ["learned", "remove"] in paths and ["teams", "package"] in paths and len(paths) > 15
    for path in paths:
        short, long = invoke(*path, "-h"), invoke(*path, "--help")
        assert short.exit_code == 0 and long.exit_code == 0, (path, short.output)
        assert short.stdout == long.stdout and short.stdout.startswith(f"Usage: {' '.join(['askdesk', *path])} ")
        assert "<bool>" not in short.stdout and "╭" not in short.stdout, short.stdout
        assert re.search(r"^  -h, --help +Show this message and exit\.$", short.stdout, re.M), short.stdout
    ingest = invoke("ingest", "-h").stdout
    assert re.search(r"^  --prune +Delete", ingest, re.M) and re.search(r"^  --json +Print", ingest, re.M)
    assert re.search(r"^  -v, --verbose +Log", invoke("serve", "-h").stdout, re.M)


def test_version_is_the_packages_and_no_arguments_prints_the_help():
    shown = invoke("--version")
    assert (shown.exit_code, shown.stdout) == (0, f"askdesk {version('askdesk')}\n")
    bare = invoke()
    assert bare.exit_code == 2 and "Commands:" in bare.output and "ask " in bare.output
