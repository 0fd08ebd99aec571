"""`askdesk ingest`, `askdesk search` and `askdesk eval` through the real typer app."""

from __future__ import annotations

import json

import pytest
import yaml
from typer.testing import CliRunner

from bot.cli import app
from tests.knowledge_fixtures import SUBSET


@pytest.fixture
def cli_env(settings, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    return settings


def _run(*args: str):
    return CliRunner().invoke(app, list(args))


def test_ingest_search_and_eval_commands(cli_env, kb_subset, tmp_path):
    (kb_subset / "empty.md").write_text("", encoding="utf-8")
    result = _run("ingest", str(kb_subset))
    assert result.exit_code == 0, result.output
    assert "skipped empty.md: empty file" in result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith(f"Ingested into 'kb': {len(SUBSET)} files, ") and " chunks, " in last and last.endswith(" s")

    again = _run("ingest", str(kb_subset), "--json")
    report = json.loads(again.stdout)
    assert report["updated"] == [] and len(report["unchanged"]) == len(SUBSET)
    assert report["skipped"] == [{"file": "empty.md", "reason": "empty file"}]

    result = _run("search", "KinderSign tablet", "--top-k", "2", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert len(rows) == 2 and set(rows[0]) == {"text", "source", "title", "section", "score"}
    assert "KinderSign" in rows[0]["text"]

    result = _run("search", "KinderSign tablet")
    assert result.exit_code == 0 and "1. parent-tx3c-attendance-help-english-twc-qa.md" in result.stdout

    eval_file = tmp_path / "eval.yaml"
    eval_file.write_text(
        yaml.safe_dump(
            {
                "retrieval": [
                    {"id": "k1", "question": "BCY26 family of 5 biweekly income limit", "lang": "en", "must_contain": ["$4,106"]},
                    {"id": "k2", "question": "número de Relay Texas", "lang": "es", "must_contain": ["800-735-2989"]},
                    {"id": "k3", "question": "what colour is the sky on Mars?", "lang": "en", "must_contain": ["butterscotch"]},
                ],
                "someday": [{"id": "x"}],
            }
        ),
        encoding="utf-8",
    )
    result = _run("eval", str(eval_file), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    r = data["retrieval"]
    assert {"recall@1", "recall@3", "recall@5", "mrr", "by_lang", "n", "failures"} <= set(r)
    assert r["n"] == 3 and r["failures"] == ["k3"] and r["recall@5"] == pytest.approx(2 / 3, abs=1e-3)
    assert r["by_lang"] == {"en": 0.5, "es": 1.0}
    assert "skipped" in data["someday"]

    result = _run("eval", str(eval_file), "--top-k", "3")
    assert result.exit_code == 0
    assert "recall@1" in result.stdout and "failing: k3" in result.stdout
    assert "== someday\nskipped" in result.stdout


def test_cli_errors_are_one_line_without_traceback(cli_env, tmp_path, monkeypatch):
    result = _run("search", "TX3C")
    assert result.exit_code == 1
    assert result.stderr.strip() == "error: the knowledge base 'kb' is empty — run `askdesk ingest PATH` first"
    assert "Traceback" not in result.output

    result = _run("ingest", str(tmp_path / "nowhere"))
    assert result.exit_code == 2 and result.stderr == f"error: {tmp_path / 'nowhere'}: no such file or directory\n"

    eval_file = tmp_path / "eval.yaml"
    eval_file.write_text("retrieval:\n  - {id: a, question: q, must_contain: [x]}\n", encoding="utf-8")
    result = _run("eval", str(eval_file))
    assert result.exit_code == 1 and result.stderr.startswith("error: the knowledge base 'kb' is empty")
    result = _run("eval", str(tmp_path / "missing.yaml"))
    assert result.exit_code == 2 and "missing.yaml: no such file or directory" in result.stderr

    monkeypatch.setenv("ASKDESK_EMBEDDER", "openai:text-embedding-3-small")  # no key set in tests
    doc = tmp_path / "note.md"
    doc.write_text("# Note\n\nSome text.\n", encoding="utf-8")
    result = _run("ingest", str(doc))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip() == "error: embedder openai:text-embedding-3-small needs OPENAI_API_KEY (or OPENAI_BASE_URL)"
