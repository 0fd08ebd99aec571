"""`askdesk search` and `askdesk ask` (search-only) draw a document's table as a table, every
row whole, through the real typer app (issue 34: it was flattened into one line and cut)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from bot.cli import app
from tests.test_answer_tables import FEES


@pytest.fixture
def cli_env(settings, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    return settings


def test_search_and_ask_draw_the_fee_table_whole(cli_env, tmp_path):
    kb = tmp_path / "kb"
    kb.mkdir()
    (kb / "building-permits.md").write_text(
        "# Building permits\n\n## Building permit fees\n\nFees are based on the **total valuation** of the work.\n\n"
        f"{FEES.markdown()}\n\nA plan review fee of 65% is added.\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(app, ["ingest", str(kb)]).exit_code == 0
    for args in (["search", "building permit fee by valuation", "--top-k", "1"],
                 ["ask", "what is the building permit fee by valuation?"]):
        result = runner.invoke(app, args, env={"COLUMNS": "160"})
        assert result.exit_code == 0, result.output
        out = result.stdout
        assert "|---" not in out and "**" not in out  # drawn, not raw Markdown
        for first, fee in FEES.rows:  # every row, each on one line (wide enough not to wrap)
            assert any(first in line and fee in line for line in out.splitlines()), (first, out)
