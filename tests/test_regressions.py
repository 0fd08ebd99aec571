"""Feedback that becomes a test: an expert's reply saved as an answer after a 👎 (through the real
Slack bot and its fake), or a learned answer written in the console, becomes a regression case
(question, expected source); `askdesk eval --regressions` runs them all, and every sync that
changes something reports the cases that no longer find their source."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from typer.testing import CliRunner

from agent.evaluation.regressions import add_case, check, load_cases
from bot.cli import app
from tests.fakes.slack_api import message_event
from tests.test_escalation_slack import ESC, EXPERT_ANSWER, QUESTION, _escalations, ask_and_thumbs_down, buttons
from tests.test_revisit import desk, org, sync, write  # noqa: F401
from tests.test_slack_bot import bot_messages, fake_slack, llm, make_bot  # noqa: F401


async def test_an_experts_answer_to_a_thumbs_down_becomes_a_case_that_finds_it(make_bot, fake_slack, llm):
    slack = await make_bot(escalation_channel=ESC)
    askdesk = slack.bot.services.askdesk
    ts = "1700007000.000100"
    _, ask = await ask_and_thumbs_down(slack, fake_slack, llm, ts)
    await slack.click("escalate", ask["value"], message_ts="1700009999.000100", thread_ts=ts)
    await slack.bot.drain()
    [escalation] = await _escalations(askdesk)
    await slack.send_event(message_event(EXPERT_ANSWER, channel=ESC, ts="1700007100.000100",
                                         thread_ts=escalation.target_thread, user="UEXPERT"))
    await slack.bot.drain()
    offer = bot_messages(fake_slack, ESC, escalation.target_thread)[-1]
    [save] = buttons(offer)
    await slack.click("save_answer", save["value"], channel=ESC, message_ts=offer["ts"],
                      thread_ts=escalation.target_thread, user="UEXPERT")
    await slack.bot.drain()
    [learned] = askdesk.learned()
    [case] = load_cases(askdesk.settings)
    assert (case.question, case.expected, case.origin) == (QUESTION, learned.name, "escalation")
    [result] = await check(askdesk.runtime, [case])
    assert result.found and result.rank and result.rank <= 5

    assert await askdesk.remove_learned(learned.name)  # taken out on purpose: not a regression
    assert load_cases(askdesk.settings) == []


async def test_console_answers_are_cases_and_a_sync_reports_the_ones_that_lost_their_source(desk, org):
    settings, runtime, askdesk = await desk()
    name = await askdesk.save_learned(key="console-1234abcd", question="Who approves board mileage claims?",
                                      answer="The treasurer approves them.", expert="Admin",
                                      when=datetime.now(timezone.utc))
    add_case(settings, "how much is mileage repaid per mile?", "@handbook/travel.md", origin="test")
    cases = {c.expected: c for c in load_cases(settings)}
    assert cases[name].origin == "console" and cases[name].question == "Who approves board mileage claims?"
    assert [r.found for r in await check(runtime)] == [True, True]

    write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
    report = (await sync(runtime))["handbook"]
    assert report.regressions == {"cases": 2, "found": 2, "top_k": 5, "lost": []}

    (org / "docs" / "travel.md").unlink()
    report = (await sync(runtime))["handbook"]
    assert [c["expected"] for c in report.regressions["lost"]] == ["@handbook/travel.md"]
    assert "1 regression cases lost their source" in report.summary()
    assert report.to_json()["regressions"]["found"] == 1
    assert (await sync(runtime))["handbook"].regressions is None  # nothing changed: nothing checked


def test_eval_regressions_prints_each_case_and_fails_when_one_is_lost(settings, kb_subset, monkeypatch):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))
    cli = CliRunner()
    assert cli.invoke(app, ["ingest", str(kb_subset)]).exit_code == 0
    empty = cli.invoke(app, ["eval", "--regressions"])
    assert empty.exit_code == 0 and "no regression cases yet" in empty.stdout
    doc = "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
    add_case(settings, "what is the income limit for child care eligibility?", doc, origin="test")

    ran = cli.invoke(app, ["eval", "--regressions", "--json"])
    assert ran.exit_code == 0, ran.output
    data = json.loads(ran.stdout)
    assert (data["cases"], data["found"], data["lost"]) == (1, 1, [])
    assert data["results"][0]["expected"] == doc and data["results"][0]["rank"] <= 5

    (kb_subset / doc).unlink()
    assert cli.invoke(app, ["ingest", str(kb_subset), "--prune"]).exit_code == 0
    lost = cli.invoke(app, ["eval", "--regressions"])
    assert lost.exit_code == 1 and "NOT FOUND" in lost.stdout and "0/1 cases find their source" in lost.stdout
    both = cli.invoke(app, ["eval", str(kb_subset / "trs-parent-brochure-spa-qa.md"), "--regressions"])
    assert both.exit_code == 2
