"""Learned answers age on a clock the tests control: the owner is messaged once inside the
reminder window (never before it, never twice for one date), an answer past its review date is
no longer found or cited, Confirm brings it back with a new date, Edit replaces its text, Retire
removes it; only the owner or an admin may press the buttons. Slack and Teams run as the real
bots against the recording fakes; the store is the real SQLite one (and PostgreSQL for the
citations query when tests/postgres_server.py can start one)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from agent.answers import AskRequest
from agent.clock import ManualClock
from agent.knowledge.learned_review import Reviews, answered_since
from agent.knowledge.search import search
from agent.learned import Owner, Reminder
from agent.state.base import TurnRecord
from bot.slack.learned_review import notifier as slack_notifier
from tests.test_slack_bot import fake_slack, make_bot  # noqa: F401
from tests.test_teams_bot import connector  # noqa: F401

START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
QUESTION = "Can a grandparent pick up my child from the child care center?"
ANSWER = "Yes: any adult the parent lists on the enrollment form, grandparents included, with a photo ID."
NEW_ANSWER = "Yes, if the parent lists them on the enrollment form; bring a photo ID and the child's card."
QUERY = "may a grandparent pick up a child from child care"


class Recorder:
    """A notifier that keeps what it was asked to send (for the surface-free tests)."""

    def __init__(self) -> None:
        self.sent: list[Reminder] = []

    async def __call__(self, reminder: Reminder) -> bool:
        self.sent.append(reminder)
        return True


async def found(askdesk, name: str) -> bool:
    return any(p.source == name for p in await search(askdesk.runtime, QUERY, top_k=10))


async def saved(askdesk, clock: ManualClock, owner: Owner | None = None) -> str:
    askdesk.learned_answers.clock = clock
    return await askdesk.save_learned(key="E1", question=QUESTION, answer=ANSWER, expert="Ada Expert",
                                      when=clock.now(), owner=owner or Owner(surface="slack", id="UEXPERT", name="Ada"))


async def test_the_review_cycle_on_a_moved_clock(make_bot):
    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock)
    recorder = Recorder()
    reviews = Reviews(askdesk.learned_answers, askdesk.state, {"slack": recorder})
    try:
        [answer] = askdesk.learned()
        assert (answer.owner.id, answer.reviewed, askdesk.learned_answers.status(answer)) == ("UEXPERT", START, "current")

        # before the reminder window (review date START + 180 days, window 14 days): nothing
        clock.advance(days=165)
        assert (await reviews.run()).reminded == [] and recorder.sent == []
        assert await found(askdesk, name)

        # inside it: one message, with the review date; a second round sends none
        clock.advance(days=2)
        assert (await reviews.run()).reminded == [name]
        [reminder] = recorder.sent
        assert (reminder.expired, reminder.review_by) == (False, START + timedelta(days=180))
        assert (await reviews.run()).reminded == [] and len(recorder.sent) == 1
        assert await found(askdesk, name)  # still cited while due

        # past the review date: out of the index (not found, not cited), shown as expired; the
        # owner was told already for this date, so no second message
        clock.advance(days=14)
        done = await reviews.run()
        assert (done.expired, done.reminded) == ([name], [])
        [answer] = askdesk.learned()
        assert answer.expired and askdesk.learned_answers.status(answer) == "expired"
        assert not await found(askdesk, name)
        result = await askdesk.answer(AskRequest(text=QUERY))
        assert name not in [r.source for r in result.references] and "grandparents included" not in result.answer
        assert (await reviews.run()).expired == []  # expired once

        # confirmed: cited again, with a new review date 180 days from the confirmation
        confirmed = await askdesk.learned_answers.confirm(name)
        assert not confirmed.expired and confirmed.reviewed == clock.now()
        assert askdesk.learned_answers.review_by(confirmed) == clock.now() + timedelta(days=180)
        assert await found(askdesk, name)
        result = await askdesk.answer(AskRequest(text=QUERY))
        assert name in [r.source for r in result.references]

        # the new date's window brings one new message
        clock.advance(days=170)
        assert (await reviews.run()).reminded == [name] and len(recorder.sent) == 2
    finally:
        await askdesk.remove_learned(name)
    assert askdesk.learned() == [] and not await found(askdesk, name)


async def test_an_answer_without_a_reachable_owner_still_expires_and_is_listed_unreached(make_bot):
    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock, Owner(surface="console", id="admin@example.org"))
    reviews = Reviews(askdesk.learned_answers, askdesk.state, {"slack": Recorder()})
    try:
        clock.advance(days=181)
        done = await reviews.run()
        assert (done.expired, done.reminded, done.unreached) == ([name], [], [name])
        assert not await found(askdesk, name)
    finally:
        await askdesk.remove_learned(name)


async def test_questions_answered_since_count_turns_citing_it_after_its_last_confirmation(make_bot):
    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock)
    try:
        for days, sources in ((-1, [name]), (1, [name, "other.md"]), (2, ["other.md"]), (3, [name])):
            await askdesk.state.record_turn(TurnRecord(created_at=START + timedelta(days=days), surface="slack",
                                                       outcome="answered", sources=sources, question=f"q{days}"))
        [answer] = askdesk.learned()
        cited = await answered_since(askdesk.state, [answer])
        assert [c.question for c in cited[name]] == ["q1", "q3"]  # not the one before it was saved
        clock.advance(days=2)
        await askdesk.learned_answers.confirm(name)
        cited = await answered_since(askdesk.state, askdesk.learned())
        assert [c.question for c in cited[name]] == ["q3"]
    finally:
        await askdesk.remove_learned(name)


def actions(message_args: dict) -> dict[str, dict]:
    return {e["action_id"]: e for b in message_args["blocks"] if b.get("type") == "actions" for e in b["elements"]}


async def test_slack_owner_gets_one_dm_and_confirms_edits_and_retires_others_are_refused(make_bot, fake_slack):
    slack = await make_bot(admins="UADMIN")
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock)
    reviews = Reviews(askdesk.learned_answers, askdesk.state,
                      {"slack": slack_notifier(slack.bot.app.client, askdesk.prompts)})
    try:
        clock.advance(days=150)
        await reviews.run()
        assert [c for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "UEXPERT"] == []

        clock.advance(days=20)  # within 14 days of the review date
        await reviews.run()
        await reviews.run()
        [dm] = [c.args for c in fake_slack.calls_to("chat.postMessage") if c.args["channel"] == "UEXPERT"]
        assert QUESTION in dm["text"] and "2026-07-04" in dm["text"]  # START + 180 days
        assert "grandparents included" in json.dumps(dm["blocks"])
        buttons = actions(dm)
        assert set(buttons) == {"learned_confirm", "learned_edit", "learned_retire"}

        # someone else's press changes nothing and says why, privately
        before = askdesk.learned()[0].reviewed
        assert await slack.click("learned_confirm", buttons["learned_confirm"]["value"], user="UOTHER",
                                 channel="DUEXPERT", message_ts="1700000001.000100") == 200
        await slack.bot.drain()
        assert askdesk.learned()[0].reviewed == before
        refused = fake_slack.calls_to("chat.postEphemeral")[-1].args
        assert refused["user"] == "UOTHER" and "Only the person who saved this answer" in refused["text"]

        # the owner confirms: a new review date, and the DM's buttons give way to it
        clock.advance(days=1)
        await slack.click("learned_confirm", buttons["learned_confirm"]["value"], user="UEXPERT",
                          channel="DUEXPERT", message_ts="1700000001.000100")
        await slack.bot.drain()
        assert askdesk.learned()[0].reviewed == clock.now()
        update = fake_slack.calls_to("chat.update")[-1].args
        assert update["ts"] == "1700000001.000100" and "Confirmed" in update["text"] and f"{clock.now() + timedelta(days=180):%Y-%m-%d}" in update["text"]
        assert "actions" not in json.dumps([b["type"] for b in update["blocks"]])

        # Edit opens a box with the answer; the submission replaces the text that is searched
        await slack.click("learned_edit", buttons["learned_edit"]["value"], user="UEXPERT", channel="DUEXPERT",
                          message_ts="1700000001.000100")
        await slack.bot.drain()
        [box] = [c.args for c in fake_slack.calls_to("views.open") if c.args["view"]["callback_id"] == "learned_edit_view"]
        field = box["view"]["blocks"][0]["element"]
        assert field["initial_value"] == ANSWER and field["multiline"]
        values = {"learned_edit_text": {"answer": {"type": "plain_text_input", "value": NEW_ANSWER}}}
        assert await slack.submit_view(box["view"], values, user="UOTHER") == 200  # not theirs: nothing changes
        await slack.bot.drain()
        assert askdesk.learned()[0].answer == ANSWER
        clock.advance(days=1)
        assert await slack.submit_view(box["view"], values, user="UEXPERT") == 200
        await slack.bot.drain()
        [answer] = askdesk.learned()
        assert answer.answer == NEW_ANSWER and answer.reviewed == clock.now()
        texts = [p.text for p in await search(askdesk.runtime, QUERY, top_k=10) if p.source == name]
        assert texts and "child's card" in texts[0] and "grandparents included" not in " ".join(texts)
        assert "Saved" in fake_slack.calls_to("chat.update")[-1].args["text"]

        # an admin may retire it: the file and its passages go
        await slack.click("learned_retire", buttons["learned_retire"]["value"], user="UADMIN", channel="DUEXPERT",
                          message_ts="1700000001.000100")
        await slack.bot.drain()
        assert askdesk.learned() == [] and not await found(askdesk, name)
        assert "Retired" in fake_slack.calls_to("chat.update")[-1].args["text"]
    finally:
        await askdesk.remove_learned(name)


async def test_slack_save_as_answer_makes_the_expert_its_owner(make_bot, fake_slack):
    """The owner comes from the escalation's expert, whoever pressed "Save as answer"."""
    from agent.state.base import Escalation

    slack = await make_bot(admins="UADMIN")
    askdesk = slack.bot.services.askdesk
    escalation = Escalation(id="esc1", surface="slack", asker="U0001", conversation="C0001", question=QUESTION,
                            target_surface="slack", target_channel="CESC", target_thread="1700000100.000100",
                            status="answered", expert_id="UEXPERT", expert_name="Ada", expert_answer=ANSWER)
    await askdesk.state.save_escalation(escalation)
    await slack.click("save_answer", json.dumps({"e": "esc1"}), user="UADMIN", channel="CESC",
                      thread_ts="1700000100.000100")
    await slack.bot.drain()
    [answer] = askdesk.learned()
    try:
        assert answer.owner == Owner(surface="slack", id="UEXPERT", name="Ada")
    finally:
        await askdesk.remove_learned(answer.name)


@pytest.fixture
async def make_teams(kb_runtime, connector, tmp_path):
    """The Teams bot (dev mode) over its own Askdesk, against the fake Bot Connector."""
    from agent.config import Settings
    from agent.turn.service import Askdesk
    from tests.fakes.teams_connector import TeamsHarness

    made = []

    async def make(**overrides):
        settings = Settings(**(dict(data_dir=tmp_path / "teams-data", llm_max_retries=0) | overrides))
        askdesk = Askdesk.create(settings, runtime=kb_runtime)
        harness = await TeamsHarness.start(connector, settings, askdesk, kb_runtime)
        made.append((harness, askdesk))
        return harness

    yield make
    for harness, askdesk in made:
        await harness.close()
        await askdesk.close()


def card_parts(message: dict) -> tuple[dict, dict[str, dict]]:
    """(the card's text field, its buttons by action) of a review card."""
    body = [b for att in message.get("attachments") or [] for b in (att.get("content") or {}).get("body") or []]
    [field] = [b for b in body if b.get("type") == "Input.Text"]
    buttons = {a["data"]["askdesk"]: a for b in body if b.get("type") == "ActionSet" for a in b["actions"]}
    return field, buttons


async def test_teams_owner_gets_a_card_in_a_personal_chat_and_edits_in_it(make_teams, connector):
    from bot.teams.learned_review import notifier as teams_notifier
    from tests.fakes.teams_connector import TENANT_ID, card_submit

    teams = await make_teams()
    askdesk = teams.bot.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock, Owner(surface="teams", id="29:user-expert", name="Ada",
                                             service_url=connector.service_url, tenant=TENANT_ID))
    reviews = Reviews(askdesk.learned_answers, askdesk.state, {"teams": teams_notifier(teams.bot)})
    try:
        clock.advance(days=100)
        await reviews.run()
        assert connector.created == []
        clock.advance(days=70)
        assert (await reviews.run()).reminded == [name]
        [chat] = connector.created
        assert [m["id"] for m in chat["members"]] == ["29:user-expert"]
        [card] = connector.sent_messages(chat["id"])
        field, buttons = card_parts(card)
        assert field["value"] == ANSWER and set(buttons) == {"learned_confirm", "learned_edit", "learned_retire"}
        assert QUESTION in card["text"]
        conversation = {"id": chat["id"], "conversationType": "personal", "tenantId": TENANT_ID}

        async def press(action: str, user: str, **extra) -> None:
            status, _ = await teams.post(card_submit(connector.service_url, {**buttons[action]["data"], **extra},
                                                     conversation=conversation, user=user))
            assert status == 200
            await teams.bot.drain()

        # someone else's edit changes nothing
        await press("learned_edit", "29:user-other", answer=NEW_ANSWER)
        assert askdesk.learned()[0].answer == ANSWER
        assert any("Only the person who saved this answer" in (m.get("text") or "")
                   for m in connector.sent_messages(chat["id"]))
        # the owner's edit: the field's text replaces the answer and confirms it
        clock.advance(days=1)
        await press("learned_edit", "29:user-expert", answer=NEW_ANSWER)
        [answer] = askdesk.learned()
        assert answer.answer == NEW_ANSWER and answer.reviewed == clock.now()
        assert "Saved" in connector.sent_messages(chat["id"])[-1]["text"]
        # retire
        await press("learned_retire", "29:user-expert")
        assert askdesk.learned() == [] and not await found(askdesk, name)
    finally:
        await askdesk.remove_learned(name)


def test_cli_expired_answers_leave_askdesk_ask_until_confirmed(settings, monkeypatch, kb_subset):
    """`askdesk learned review` takes an answer past its date out of `askdesk ask`'s citations;
    `askdesk learned confirm` brings it back for another review period (the machine's clock)."""
    import asyncio

    from typer.testing import CliRunner

    from agent.knowledge import learned
    from agent.runtime import Runtime
    from bot.cli import app

    monkeypatch.setenv("ASKDESK_DATA_DIR", str(settings.data_dir))

    def run(*args: str):
        return CliRunner().invoke(app, list(args))

    def cited() -> list[str]:
        result = run("ask", QUERY, "--json")
        assert result.exit_code == 0, result.output
        return [r["source"] for r in json.loads(result.stdout)["references"]]

    assert run("ingest", str(kb_subset)).exit_code == 0
    long_ago = datetime.now(timezone.utc) - timedelta(days=200)

    async def save() -> str:
        runtime = Runtime.open(settings)
        try:
            name, _ = await learned.save(runtime, settings.learned_path, key="e1", question=QUESTION, answer=ANSWER,
                                         expert="Ada Expert", when=long_ago,
                                         owner=Owner(surface="slack", id="UEXPERT", name="Ada"))
            return name
        finally:
            await runtime.close()

    name = asyncio.run(save())
    [row] = json.loads(run("learned", "list", "--json").stdout)
    assert (row["status"], row["owner"]["id"]) == ("expired", "UEXPERT")
    assert name in cited()  # past its date, but only a review round takes it out

    reviewed = run("learned", "review")
    assert reviewed.exit_code == 0 and f"expired {name}" in reviewed.stdout
    assert name not in cited()
    assert "no learned answer is past its review date" in run("learned", "review").stdout

    confirmed = run("learned", "confirm", name)
    review_by = datetime.now(timezone.utc) + timedelta(days=180)
    assert confirmed.exit_code == 0 and f"cited until {review_by:%Y-%m-%d}" in confirmed.stdout
    assert name in cited()
    assert "(current, review by" in run("learned", "list").stdout
    assert run("learned", "confirm", "nothing.md").exit_code == 2


async def test_console_lists_owner_review_date_status_and_citations_and_confirms_and_edits(make_bot, tmp_path):
    """Over HTTP (the pages' look is the browser test's): an expired answer shows as expired with
    the questions it answered; Confirm brings it back, Edit replaces its text; an answer written
    from a gap is owned by the admin who wrote it."""
    import aiohttp

    from bot.console.plugin import ConsoleSurface
    from bot.surface import Desk
    from tests.test_console_auth import bootstrap_sign_in, csrf_of, free_port

    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock)
    await askdesk.state.record_turn(TurnRecord(created_at=START + timedelta(days=3), surface="slack",
                                               outcome="answered", sources=[name], question="who may fetch my kid?"))
    clock.advance(days=200)
    await Reviews(askdesk.learned_answers, askdesk.state, {}).run()
    port = free_port()
    settings = askdesk.settings.model_copy(update={"console_port": port, "admins": "U0ADMIN",
                                                   "console_public_url": f"http://127.0.0.1:{port}"})
    surface = ConsoleSurface(settings)
    stop = await surface.start(Desk(settings=settings, askdesk=askdesk, runner=None, host="127.0.0.1"))
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
            assert (await bootstrap_sign_in(http, base, surface.bootstrap_token)).status == 303
            page = await (await http.get(f"{base}/learned")).text()
            row = page[page.index(QUESTION):page.index("</tr>", page.index(QUESTION))]
            assert "Ada" in row and "(slack)" in row and '<td class="status">expired</td>' in row
            assert "2026-07-04" in row and "who may fetch my kid?" in row and "<td>1" in row
            assert not await found(askdesk, name)

            token = await csrf_of(http, f"{base}/learned")
            page = await (await http.post(f"{base}/learned/confirm", data={"csrf": token, "name": name})).text()
            assert await found(askdesk, name)
            assert "Confirmed" in page and '<td class="status">current</td>' in page
            assert f"{clock.now() + timedelta(days=180):%Y-%m-%d}" in page

            form = await (await http.get(f"{base}/learned/edit", params={"name": name})).text()
            assert ANSWER in form
            await http.post(f"{base}/learned/edit", data={"csrf": token, "name": name, "answer": NEW_ANSWER})
            assert askdesk.learned()[0].answer == NEW_ANSWER
            assert (await http.get(f"{base}/learned/edit", params={"name": "nothing.md"})).status == 404

            await http.post(f"{base}/gaps/learn", data={"csrf": token, "question": "Where do I park?",
                                                        "answer": "Behind the building."})
            [written] = [a for a in askdesk.learned() if a.question == "Where do I park?"]
            assert written.owner is not None and (written.owner.surface, written.owner.id) == ("console", "bootstrap")
            await askdesk.remove_learned(written.name)
    finally:
        await stop()
        await askdesk.remove_learned(name)


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def turn_store(request, tmp_path):
    from agent.state.memory import MemoryState
    from agent.state.postgres import PostgresState
    from agent.state.sqlite import SQLiteState

    if request.param == "memory":
        store = MemoryState()
    elif request.param == "sqlite":
        store = SQLiteState(tmp_path / "state.sqlite")
    else:
        store = PostgresState(request.getfixturevalue("postgres_url"))
    await store.open()
    yield store
    await store.close()


async def test_citations_are_read_in_the_database_by_source_and_date(turn_store):
    """`TurnLog.citations` on every backend: the turns citing the named sources since a date."""
    rows = [(0, ["a.md"]), (1, ["b.md", "a.md"]), (2, ["c.md"]), (3, []), (4, ["a.md", "c.md"])]
    for day, sources in rows:
        await turn_store.record_turn(TurnRecord(created_at=START + timedelta(days=day), surface="slack",
                                                outcome="answered", sources=sources, question=f"q{day}"))
    found = await turn_store.citations(["a.md", "c.md"], START + timedelta(days=1))
    assert [(c.source, c.question) for c in found] == [("a.md", "q1"), ("c.md", "q2"), ("a.md", "q4"), ("c.md", "q4")]
    assert found[0].created_at == START + timedelta(days=1)
    assert await turn_store.citations([], START) == [] and await turn_store.citations(["z.md"], START) == []


async def test_the_console_counts_incrementally_and_again_from_a_new_confirmation(tmp_path):
    """The Learned page's counts (bot/console/learned_citations.py): a later view adds only the
    turns recorded since, never one twice; a confirmation counts again from its date."""
    from agent.learned import LearnedAnswer
    from agent.state.sqlite import SQLiteState
    from bot.console.learned_citations import LearnedCitations

    store = SQLiteState(tmp_path / "state.sqlite")
    await store.open()
    now = datetime.now(timezone.utc)

    async def turn(at: datetime, source: str, question: str) -> None:
        await store.record_turn(TurnRecord(created_at=at, surface="slack", outcome="answered", sources=[source],
                                           question=question))

    try:
        answer = LearnedAnswer(name="a.md", question="Q", expert="E", date="", reviewed=now - timedelta(days=30))
        await turn(now - timedelta(days=40), "a.md", "before it was saved")
        await turn(now - timedelta(days=2), "a.md", "q1")
        await turn(now - timedelta(days=1), "b.md", "other")
        counts = LearnedCitations(store)
        assert [c.question for c in (await counts.of([answer]))["a.md"]] == ["q1"]
        await turn(now - timedelta(minutes=1), "a.md", "q2")  # inside the overlap: read again, counted once
        assert [c.question for c in (await counts.of([answer]))["a.md"]] == ["q1", "q2"]
        assert [c.question for c in (await counts.of([answer]))["a.md"]] == ["q1", "q2"]
        confirmed = answer.model_copy(update={"reviewed": now - timedelta(days=1)})
        assert [c.question for c in (await counts.of([confirmed]))["a.md"]] == ["q2"]
        assert await counts.of([]) == {} and counts.kept == {}
    finally:
        await store.close()


async def test_an_answer_saved_before_reviews_gets_a_full_period_not_an_instant_expiry(make_bot):
    from agent.knowledge.learned import render

    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    askdesk.learned_answers.clock = clock
    folder = askdesk.settings.learned_path
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "old-e0.md").write_text(render(QUESTION, ANSWER, "Ada", START - timedelta(days=700)), encoding="utf-8")
    done = await Reviews(askdesk.learned_answers, askdesk.state, {}).run()
    [answer] = askdesk.learned()
    assert done.expired == [] and answer.reviewed == START and not answer.expired
    assert askdesk.learned_answers.status(answer) == "current" and answer.date == (START - timedelta(days=700)).strftime("%Y-%m-%d")


async def test_an_expired_answer_lists_no_revisit_but_an_edited_one_does(make_bot):
    """Expiry only withholds an answer (its text did not change): askers who were given it get no
    "the document changed" note; an owner's edit changes it, and its answers are listed."""
    import time

    from agent.revisit import CitedAnswer, open_log

    slack = await make_bot()
    askdesk = slack.bot.services.askdesk
    clock = ManualClock(START)
    name = await saved(askdesk, clock)
    log = open_log(askdesk.runtime.settings)  # where ingest lists them: the knowledge base's data dir
    try:
        log.cite(CitedAnswer(answer_id="a1", created=time.time(), surface="slack", thread_id="C1:1.0",
                             asker="UASKER", question=QUERY, sources=[name]), keep_days=14)
        reviews = Reviews(askdesk.learned_answers, askdesk.state, {})
        clock.advance(days=181)
        assert (await reviews.run()).expired == [name]
        assert [r.source for r in log.revisits() if r.answer.answer_id == "a1"] == []
        await askdesk.learned_answers.confirm(name)
        await askdesk.learned_answers.edit(name, "Yes: a grandparent on the pick-up list, with photo ID.")
        assert [(r.source, r.change) for r in log.revisits() if r.answer.answer_id == "a1"] == [(name, "changed")]
    finally:
        for table in ("revisits", "cited_sources", "cited"):  # the data dir is shared by the module's tests
            log.db.execute(f"DELETE FROM {table} WHERE answer_id = 'a1'")
        log.close()
        await askdesk.remove_learned(name)
