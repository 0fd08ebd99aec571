"""Answers revisited when their documents change: the real Slack and Teams bots (over their fakes)
answer from documents a folder source synced; a sync that changes or removes a cited document
lists those answers at once (one sync), and with ASKDESK_REVISIT_NOTIFY each asker gets one note
in the answer's thread with the question answered again as they would see it — never a source of
an audience they are not in, never for a private answer, and without a new answer when the
question's text was not kept."""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from agent.config import Settings
from agent.revisit import CitedAnswer, RevisitLog, open_log
from agent.runtime import Runtime
from agent.sources.config import load_sources
from agent.sources.sync import sync_all
from agent.turn.service import Askdesk
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.slack_api import BOT_ID, FakeSlackAPI, SlackHarness
from tests.fakes.teams_connector import FakeTeamsConnector, TeamsHarness, channel_conversation

QUESTION = "how much is mileage repaid per mile?"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def org(tmp_path):
    write(tmp_path / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at forty cents a mile.\n")
    write(tmp_path / "docs" / "leave.md", "# Leave policy\n\n## Parental leave\n\nStaff get sixteen weeks of leave.\n")
    write(tmp_path / "hr" / "board.md", "# Board travel\n\n## Mileage\n\nBoard mileage is repaid at ninety cents a "
          "mile.\n")
    (tmp_path / "sources.yaml").write_text(f"""sources:
  - name: handbook
    kind: folder
    path: {tmp_path / 'docs'}
  - name: hr
    kind: folder
    path: {tmp_path / 'hr'}
    audience: [C0HR]
""", encoding="utf-8")
    return tmp_path


def settings_of(org: Path, **overrides) -> Settings:
    return Settings(**({"data_dir": org / "data", "sources": org / "sources.yaml", "embedder": EMBEDDER,
                        "store_text": True, "revisit_notify": True} | overrides))


@pytest.fixture
async def desk(org):
    """(settings, runtime, askdesk) over the synced folder sources, search-only (no model)."""
    made = []

    async def make(**overrides):
        settings = settings_of(org, **overrides)
        runtime = Runtime.open(settings)
        runtime._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
        await sync(runtime)
        askdesk = Askdesk.create(settings, runtime=runtime)
        made.append((runtime, askdesk))
        return settings, runtime, askdesk

    yield make
    for runtime, askdesk in made:
        await askdesk.close()
        await runtime.close()


async def sync(runtime):
    return {r.source: r for r in await sync_all(runtime, sources=load_sources(runtime.settings))}


@pytest.fixture
async def fake_slack():
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


@pytest.fixture
async def connector():
    fake = await FakeTeamsConnector().start()
    yield fake
    await fake.stop()


def revisits(settings):
    log = open_log(settings)
    try:
        return log.revisits()
    finally:
        log.close()


def slack_messages(fake, channel, ts):
    return [m for m in fake.threads.get((channel, ts), []) if m.get("bot_id") == BOT_ID]


async def test_slack_a_changed_document_lists_its_answers_in_one_sync_and_notes_each_public_asker_once(
        desk, org, fake_slack):
    settings, runtime, askdesk = await desk()
    slack = await SlackHarness.start(fake_slack, settings, askdesk, runtime)
    try:
        runner = slack.bot.services.runner
        await slack.mention(QUESTION, ts="1700000100.000100", channel="C0ALL")
        await slack.mention(f"privately {QUESTION}", ts="1700000200.000100", channel="C0ALL", user="U0002")
        await slack.bot.drain()
        [first] = slack_messages(fake_slack, "C0ALL", "1700000100.000100")
        assert "forty cents" in first["text"] and "ninety" not in json.dumps(first)  # C0ALL never sees hr
        assert revisits(settings) == []  # nothing changed yet

        write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
        reports = await sync(runtime)  # one sync: the list is up to date when it returns
        assert reports["handbook"].changed == ["Travel"] and reports["handbook"].revisits == 2
        assert "2 answers to revisit" in reports["handbook"].summary()
        listed = {r.answer.asker: r for r in revisits(settings)}
        assert {a: (r.source, r.change, r.status) for a, r in listed.items()} == {
            "U0001": ("@handbook/travel.md", "changed", "pending"),
            "U0002": ("@handbook/travel.md", "changed", "private")}
        assert listed["U0001"].answer.question == QUESTION and listed["U0002"].answer.question is None
        assert listed["U0001"].answer.audience == ["C0ALL"]

        assert await runner.revisits.deliver(askdesk) == 1  # the private answer is never noted
        note = slack_messages(fake_slack, "C0ALL", "1700000100.000100")[-1]
        assert note["thread_ts"] == "1700000100.000100" and note is not first
        body = json.dumps(note)
        assert "The document this answer cited has changed (travel.md)" in note["text"]
        assert "fifty cents" in body and "forty cents" not in body
        assert "ninety" not in body and "Board travel" not in body  # asked again with the asker's audience
        assert not [m for m in fake_slack.calls_to("chat.postMessage") if m.args.get("channel") == "U0002"]
        assert {r.answer.asker: r.status for r in revisits(settings)} == {"U0001": "noted", "U0002": "private"}
        assert await runner.revisits.deliver(askdesk) == 0  # one note per answer

        (org / "docs" / "leave.md").unlink()  # the search-only answer cited it too
        reports = await sync(runtime)
        assert reports["handbook"].removed == ["Leave policy"] and reports["handbook"].revisits == 2
        removed = [r for r in revisits(settings) if r.source == "@handbook/leave.md"]
        assert {(r.answer.asker, r.change, r.status) for r in removed} == {
            ("U0001", "removed", "listed"), ("U0002", "removed", "private")}  # listed; its asker was told already
        assert await runner.revisits.deliver(askdesk) == 0
    finally:
        await slack.close()


async def test_without_stored_text_the_note_asks_again(desk, org, fake_slack):
    settings, runtime, askdesk = await desk(store_text=False)
    slack = await SlackHarness.start(fake_slack, settings, askdesk, runtime)
    try:
        await slack.mention(QUESTION, ts="1700000300.000100", channel="C0ALL")
        await slack.bot.drain()
        write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
        await sync(runtime)
        [pending] = [r for r in revisits(settings) if r.source == "@handbook/travel.md"]
        assert pending.answer.question is None and pending.status == "pending"
        assert await slack.bot.services.runner.revisits.deliver(askdesk) == 1
        note = slack_messages(fake_slack, "C0ALL", "1700000300.000100")[-1]
        assert "Ask again for an answer from the current version" in note["text"]
        assert "fifty" not in json.dumps(note)  # no question, no new answer
        assert revisits(settings)[0].status == "noted_without_answer"
    finally:
        await slack.close()


async def test_notify_off_lists_only(desk, org, fake_slack):
    settings, runtime, askdesk = await desk(revisit_notify=False)
    slack = await SlackHarness.start(fake_slack, settings, askdesk, runtime)
    try:
        await slack.mention(QUESTION, ts="1700000400.000100", channel="C0ALL")
        await slack.bot.drain()
        write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
        await sync(runtime)
        assert [r.status for r in revisits(settings) if r.source == "@handbook/travel.md"] == ["listed"]
        assert await slack.bot.services.runner.revisits.deliver(askdesk) == 0
        assert len(slack_messages(fake_slack, "C0ALL", "1700000400.000100")) == 1
    finally:
        await slack.close()


async def test_teams_note_in_the_answers_conversation_with_the_askers_audience(desk, org, connector):
    settings, runtime, askdesk = await desk()
    teams = await TeamsHarness.start(connector, settings, askdesk, runtime)
    try:
        conversation = channel_conversation("1700000500")
        await teams.say(QUESTION, conversation=conversation, mention=True)
        await teams.bot.drain()
        [answer] = connector.sent_messages(conversation["id"])
        assert "forty cents" in answer["text"]
        write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
        assert (await sync(runtime))["handbook"].revisits == 1
        assert await teams.bot.runner.revisits.deliver(askdesk) == 1
        note = connector.sent_messages(conversation["id"])[-1]
        assert "The document this answer cited has changed (travel.md)" in note["text"]
        assert "fifty cents" in note["text"] and "ninety" not in note["text"]  # the channel never saw hr
        assert note is not answer and len(connector.sent_messages(conversation["id"])) == 2
    finally:
        await teams.close()


def test_only_answers_of_the_window_that_cited_the_document_are_listed(tmp_path):
    log = RevisitLog(tmp_path / "revisit.sqlite")
    now = time.time()

    def cite(answer_id: str, days_ago: float, sources: list[str], **kw) -> None:
        log.cite(CitedAnswer(answer_id=answer_id, created=now - days_ago * 86400, surface="slack",
                             thread_id="C1:1.0", sources=sources, **kw), keep_days=30)

    cite("recent", 2, ["a.md", "b.md"], question="q?")
    cite("old", 20, ["a.md"], question="q?")
    cite("other", 1, ["c.md"], question="q?")
    cite("private", 1, ["a.md"], question="kept?", private=True)
    found = log.documents_changed({"a.md": "changed", "b.md": "removed"}, days=14, notify=True, now=now)
    assert sorted((r.answer.answer_id, r.source, r.status) for r in found) == [
        ("private", "a.md", "private"), ("recent", "a.md", "pending"), ("recent", "b.md", "listed")]
    assert [r.answer.question for r in found if r.answer.answer_id == "private"] == [None]  # never kept
    assert log.documents_changed({"a.md": "changed"}, days=14, notify=True, now=now + 1)[0].status in (
        "listed", "private")  # a second change: listed again, its asker is not told twice
    log.close()


async def test_the_console_revisit_page_lists_them_and_the_regression_cases(desk, org, fake_slack):
    from bot.console.plugin import ConsoleSurface
    from bot.surface import Desk
    from tests.test_console_auth import bootstrap_sign_in, client, free_port

    port = free_port()
    settings, runtime, askdesk = await desk(admins="U0ADMIN", console_port=port,
                                            console_public_url=f"http://127.0.0.1:{port}")
    slack = await SlackHarness.start(fake_slack, settings, askdesk, runtime)
    surface = ConsoleSurface(settings)
    await surface.connect()
    stop = await surface.start(Desk(settings=settings, askdesk=askdesk, runner=None, host="127.0.0.1"))
    try:
        await slack.mention(QUESTION, ts="1700000600.000100", channel="C0ALL")
        await slack.mention(f"privately {QUESTION}", ts="1700000700.000100", channel="C0ALL", user="U0002")
        await slack.bot.drain()
        await askdesk.save_learned(key="console-00000001", question="Who approves board mileage claims?",
                                   answer="The treasurer.", expert="Admin", when=datetime.now(timezone.utc))
        write(org / "docs" / "travel.md", "# Travel\n\n## Mileage\n\nMileage is repaid at fifty cents a mile.\n")
        await sync(runtime)
        base = f"http://127.0.0.1:{port}"
        async with client() as http:
            assert (await bootstrap_sign_in(http, base, surface.bootstrap_token)).status == 303
            response = await http.get(f"{base}/revisit")
            page = await response.text()
        assert response.status == 200 and 'href="/revisit" aria-current="page"' in page
        assert page.count("@handbook/travel.md</code> changed") == 2
        assert QUESTION in page and "<em>private</em>" in page and "private: never noted" in page
        assert page.count(QUESTION) == 1  # the private question is nowhere
        assert "Who approves board mileage claims?" in page and "1 of 1 found their source" in " ".join(page.split())
    finally:
        await stop()
        await slack.close()
