"""The README's "60-second tour", run as written on a fresh data dir (issue 20, tried as a new user).

The commands are read from README.md's tour block, so the tour cannot drift from what is
tested. Each runs in bash from the repository root, after `source .venv/bin/activate` as the
tour says (or with this interpreter's scripts on the PATH when the suite runs from another
environment), with stdout and stderr piped: what a user sees in a log or `> file`. No model key
and no network: `export` lines name placeholder keys and `askdesk serve` needs real Slack/Teams
credentials, so those lines are not run; `ask` answers search-only, with sources.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
ACTIVATE = "source .venv/bin/activate"
TOUR_SECONDS = 60  # the README promises a 60-second tour (after the install)
KEYS = ("OPENAI_API_KEY", "GROQ_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "CLIENT_ID", "CLIENT_SECRET", "TENANT_ID")


def tour_commands() -> list[str]:
    """The tour's command lines, comments dropped."""
    text = README.read_text(encoding="utf-8")
    section = text.split("## A 60-second tour", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block, "README.md's tour has no bash block"
    lines = [re.sub(r"\s+#.*$", "", line).strip() for line in block.group(1).splitlines()]
    return [line for line in lines if line and not line.startswith("#")]


def runnable(command: str) -> bool:
    return not command.startswith("export ") and not command.startswith("askdesk serve")


def tour_env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDESK_") and k not in KEYS}
    env.update({"ASKDESK_DATA_DIR": str(data_dir), "ASKDESK_CONFIG": str(data_dir / "absent.yaml"), "NO_COLOR": "1",
                # no network: anything that tried would fail here instead of waiting on it
                "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9", "NO_PROXY": "",
                "HF_HUB_OFFLINE": "1"})
    if not (REPO / ".venv" / "bin" / "activate").is_file():  # the suite runs from another environment
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def shell(command: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess:
    if (REPO / ".venv" / "bin" / "activate").is_file():
        command = f"{ACTIVATE} && {command}"
    return subprocess.run(["bash", "-c", command], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


# what each tour command must print (stdout), beyond exiting 0
EXPECTED = {
    "askdesk ingest ": re.compile(r"Ingested into 'kb': 54 files, \d+ chunks"),
    "askdesk search ": re.compile(r"^1\. .*score", re.MULTILINE),
    "askdesk ingest-facilities ": re.compile(r"\d+"),
    "askdesk facility ": re.compile(r"Facilities: infant.*78702"),
    "askdesk ask ": re.compile(r"^Sources$", re.MULTILINE),
}


def test_the_readme_tour_runs_as_written_on_a_fresh_data_dir(tmp_path):
    commands = tour_commands()
    assert commands[0] == ACTIVATE, "the tour must say how to get askdesk on the PATH"
    ingest_at = next(i for i, c in enumerate(commands) if c.startswith("askdesk ingest "))
    loaded_at = next(i for i, c in enumerate(commands) if c.startswith("askdesk ingest-facilities "))
    facility_at = next(i for i, c in enumerate(commands) if c.startswith("askdesk facility "))
    assert ingest_at < facility_at and loaded_at < facility_at  # the tour loads what it searches
    env = tour_env(tmp_path / "data")
    started, timings = time.monotonic(), []
    for command in commands[1:]:
        if not runnable(command):
            continue
        t0 = time.monotonic()
        done = shell(command, env)
        timings.append((round(time.monotonic() - t0, 1), command))
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stdout, done.stderr)
        expected = next((p for prefix, p in EXPECTED.items() if command.startswith(prefix)), None)
        assert expected is None or expected.search(done.stdout), (command, done.stdout, done.stderr)
        assert "0/0 chunks" not in done.stderr, (command, done.stderr)  # piped progress is truthful
        if command.startswith("askdesk ask "):
            # search-only (no key): the note names the variable that enables full answers
            assert "API_KEY" in done.stdout, done.stdout
            assert not [line for line in done.stdout.splitlines() if line != line.rstrip()], done.stdout  # no padding
    total = time.monotonic() - started
    print(f"\nREADME tour: {total:.1f} s", *(f"  {s:5.1f} s  {c}" for s, c in timings), sep="\n")
    assert total < TOUR_SECONDS, timings

    # idempotent, as the tour says: the second ingest embeds nothing and says so truthfully
    again = shell(commands[ingest_at], env)
    assert again.returncode == 0 and "0 updated, 54 unchanged" in again.stdout, again.stdout
    assert "chunks" not in again.stderr, again.stderr  # nothing to write: no chunk count at all


def test_facility_search_on_a_data_dir_without_the_registry_fails(tmp_path):
    """Before: with the declaration installed but no rows loaded, `askdesk facility` printed
    "not loaded" and exited 0, so a script could not tell."""
    facility = next(c for c in tour_commands() if c.startswith("askdesk facility "))
    env = tour_env(tmp_path / "data")
    fresh = shell(facility, env)
    assert fresh.returncode == 1 and "ingest-facilities" in fresh.stderr, fresh.stderr
    registries = tmp_path / "data" / "registries"
    registries.mkdir(parents=True)
    (registries / "facility.yaml").write_bytes(
        (REPO / "examples" / "texas-childcare" / "registries" / "facility.yaml").read_bytes())
    declared = shell(facility, env)
    assert declared.returncode == 1 and "not loaded" in declared.stderr and "ingest-facilities" in declared.stderr
    generic = shell('askdesk registry search facility "infant care"', env)
    assert generic.returncode == 1 and "askdesk registry ingest facility" in generic.stderr, generic.stderr


@pytest.mark.parametrize("where", ["kb", "parent"])
def test_ingest_seeds_the_shipped_vectors_found_next_to_the_folder(tmp_path, where):
    """`askdesk ingest PATH` copies a SEED_FILE in PATH or its parent into the embedding cache,
    as `askdesk demo` does: the sample ingests in seconds wherever it is ingested from."""
    from agent.knowledge.embed_cache import SEED_FILE
    from bot.commands.knowledge import seed_files

    sample = tmp_path / "sample"
    kb = sample / "kb"
    kb.mkdir(parents=True)
    (kb / "a.md").write_text("# A\n\ntext\n", encoding="utf-8")
    seed = (kb if where == "kb" else sample) / SEED_FILE
    seed.write_bytes(b"")
    assert seed_files([kb]) == [seed.resolve()]
    assert seed_files([kb / "a.md"]) == ([seed.resolve()] if where == "kb" else [])
    assert seed_files([tmp_path]) == []
