"""`askdesk learned list|remove`: learned answers listed from their folder and removed from the
folder and the index (the same deletion `ingest --prune` does for a file that is gone)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime, timezone

import pytest
from typer.testing import CliRunner

from agent.knowledge import learned
from agent.runtime import Runtime
from bot.cli import app

QUESTION = "Can a grandparent pick up my child from the center?"


@pytest.fixture
def cli_env(settings, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    return settings


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_learned_answers_are_listed_searched_and_removed(cli_env, kb_subset):
    assert _run("ingest", str(kb_subset)).exit_code == 0
    assert "no learned answers yet" in _run("learned", "list").stdout

    async def save() -> str:
        runtime = Runtime.open(cli_env)
        try:
            name, _ = await learned.save(runtime, cli_env.learned_path, key="e1", question=QUESTION,
                                         answer="Yes, when the parent lists them on the enrollment form.",
                                         expert="Dana Expert", when=datetime(2026, 3, 4, tzinfo=timezone.utc))
            return name
        finally:
            await runtime.close()

    name = asyncio.run(save())
    listed = _run("learned", "list")
    assert listed.exit_code == 0 and name in listed.stdout and "2026-03-04  Dana Expert  " + QUESTION in listed.stdout
    [row] = json.loads(_run("learned", "list", "--json").stdout)
    assert (row["name"], row["expert"], row["question"]) == (name, "Dana Expert", QUESTION)
    found = json.loads(_run("search", "grandparent pick up child enrollment form", "--json").stdout)
    assert found[0]["source"] == name and "Answered by Dana Expert on 2026-03-04" in found[0]["text"]

    removed = _run("learned", "remove", name)
    assert removed.exit_code == 0 and f"removed {name}" in removed.stdout
    assert not (cli_env.learned_path / name).exists()
    found = json.loads(_run("search", "grandparent pick up child enrollment form", "--json").stdout)
    assert all(r["source"] != name for r in found)
    again = _run("learned", "remove", name)
    assert again.exit_code == 2 and "no learned answer named" in again.stderr  # a bad argument
