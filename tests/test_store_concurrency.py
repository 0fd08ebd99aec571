"""Two processes on one embedded data dir (issue 12 item 3): while one askdesk process holds the
store, every other command prints ONE line saying the store is in use (and what to do), exits
non-zero, and never prints a traceback. The real console script runs in subprocesses, since
the point is what a user sees on the terminal."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from agent.config import Settings
from agent.runtime import Runtime
from agent.store import StoreInUse
from tests.conftest import SAMPLE_FACILITIES, SAMPLE_KB

EXIT_IN_USE = 3


def askdesk_command() -> list[str]:
    exe = Path(sys.executable).with_name("askdesk")
    return [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDESK_")}
    env.update({"ASKDESK_DATA_DIR": str(data_dir), "ASKDESK_CONFIG": str(data_dir / "absent.yaml"),
                "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": "s",
                "ASKDESK_SLACK_API_URL": "http://127.0.0.1:9/", "NO_COLOR": "1", **extra})
    return env


async def run_cli(args: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        *askdesk_command(), *args, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    return proc.returncode or 0, out.decode(), err.decode()


def test_a_second_store_in_the_same_data_dir_is_refused_with_the_holder_named(tmp_path):
    settings = Settings(data_dir=tmp_path / "data")
    first = Runtime.open(settings)
    try:
        try:
            Runtime.open(settings)
        except StoreInUse as exc:
            message = str(exc)
        else:
            raise AssertionError("a second open of the same data dir must fail")
        assert "in use by another askdesk process" in message and f"pid {os.getpid()}" in message
        assert "\n" not in message
    finally:
        asyncio.run(first.close())
    asyncio.run(Runtime.open(settings).close())  # released on close: the next process gets it


COMMANDS = [
    ["ask", "what is the income limit?"],
    ["chat"],
    ["demo"],
    ["search", "income limit"],
    ["facility", "infant care near 78702"],
    ["ingest-facilities", str(SAMPLE_FACILITIES)],
    ["eval", "{eval}"],
    ["serve", "slack"],
]


async def test_every_command_says_in_one_line_that_the_store_is_in_use(tmp_path):
    data = tmp_path / "data"
    holder = Runtime.open(Settings(data_dir=data))  # this test process plays "the other process"
    from tests.knowledge_fixtures import DEMO_REGISTRY

    (data / "registries").mkdir()  # a deployment with the demo's registry (`facility` needs one)
    (data / "registries" / DEMO_REGISTRY.name).write_bytes(DEMO_REGISTRY.read_bytes())
    try:
        env = cli_env(data)
        eval_file = tmp_path / "eval.yaml"
        eval_file.write_text("retrieval:\n  - {id: q1, question: income limit, expected: [a.md]}\n", encoding="utf-8")
        commands = [[a.replace("{eval}", str(eval_file)) for a in args] for args in COMMANDS]
        results = await asyncio.gather(*(run_cli(args, env) for args in commands))
    finally:
        await holder.close()
    for args, (code, out, err) in zip(COMMANDS, results):
        text = (out + err).strip()
        assert code == EXIT_IN_USE, (args, code, text)
        assert "Traceback" not in text, (args, text)
        lines = [line for line in text.splitlines() if line.strip()]
        assert len(lines) == 1, (args, text)
        assert "is in use by another askdesk process" in lines[0] and f"pid {os.getpid()}" in lines[0], (args, text)


async def test_ingest_without_a_running_server_waits_for_nobody_and_says_what_to_do(tmp_path):
    """A holder that is not `askdesk serve` (e.g. a long `askdesk chat`) cannot take an ingest
    job: `askdesk ingest` gets the same one line and exit code, nothing is written."""
    data = tmp_path / "data"
    holder = Runtime.open(Settings(data_dir=data))
    try:
        code, out, err = await run_cli(["ingest", str(SAMPLE_KB / "bcy2025-psoc-chart-twc-qa.md")], cli_env(data))
    finally:
        await holder.close()
    assert code == EXIT_IN_USE and "Traceback" not in out + err
    assert len((out + err).strip().splitlines()) == 1 and "in use" in err
