"""An answer left streaming by a process killed mid-answer does not spin "Thinking…" for good
(issue 31). A real `askdesk serve slack` is killed with SIGKILL while its answer streams into
the fake Slack API (the question's file download stalls, so the turn is mid-way); then either
the next `askdesk serve` closes that stream at start-up, or Slack's retry of the same event
closes it and answers again. Slack keeps a stream open until chat.stopStream, as the fake does.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from pathlib import Path

import aiohttp

from agent.config import Settings
from agent.state.sqlite import SQLiteState
from bot.commands.serve import run_serve
from bot.slack.reply import STREAMS
from tests.fakes import Stream
from tests.fakes.slack_api import SIGNING_SECRET, event_envelope, message_event, signed_headers
from tests.test_slack_bot import (  # noqa: F401  (fixtures)
    AGENT,
    BOT_USER_ID,
    KB_DOC,
    bot_messages,
    fake_slack,
    final,
    llm,
    make_bot,
)

QUESTION_TS = "1700200000.000100"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def the_event(fake) -> dict:
    """A mention with a file whose download stalls: the answer's stream is open meanwhile."""
    stalled = fake.add_file("notes.txt", b"Families of 4 qualify up to the income limit.", "text/plain", stall=60)
    return message_event(f"<@{BOT_USER_ID}> who is eligible by income?", ts=QUESTION_TS, type="app_mention",
                         files=[stalled])


async def kill_mid_answer(fake, data_dir: Path, event: dict, event_id: str) -> str:
    """Run `askdesk serve slack` on `data_dir`, send it `event`, SIGKILL it while its answer
    streams; the ts of the stream it left open."""
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SIGNING_SECRET, ASKDESK_SLACK_API_URL=fake.api_url,
               ASKDESK_DATA_DIR=str(data_dir), ASKDESK_PORT=str(port))
    exe = Path(sys.executable).with_name("askdesk")
    command = [str(exe)] if exe.is_file() else [sys.executable, "-c", "from bot.cli import main; main()"]
    proc = await asyncio.create_subprocess_exec(*command, "serve", "slack", env=env, stdout=asyncio.subprocess.DEVNULL,
                                                stderr=asyncio.subprocess.PIPE)
    try:
        seen: list[str] = []
        while not any(line.startswith("askdesk: ready") for line in seen):
            line = await asyncio.wait_for(proc.stderr.readline(), 90)  # type: ignore[union-attr]
            assert line, "askdesk serve exited:\n" + "".join(seen)
            seen.append(line.decode())
        body = json.dumps(event_envelope(event, event_id=event_id))
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{port}/slack/events", data=body.encode(),
                                 headers=signed_headers(body)) as response:
                assert response.status == 200
        await fake.wait_for("files:download", timeout=30)  # the stream is open, the turn waits on the file
        [(channel, stream_ts)] = list(fake.streams)
        assert channel == "C0001"
    finally:
        proc.kill()  # SIGKILL: no grace period, no last word
        await proc.wait()  # reaped: its pid is gone
    return stream_ts


async def abandoned(data_dir: Path) -> list[str]:
    state = SQLiteState(data_dir / "askdesk.sqlite")
    try:
        return await state.abandoned(STREAMS)
    finally:
        await state.close()


async def test_a_stream_left_open_by_a_killed_process_is_closed_when_askdesk_starts_again(
        fake_slack, tmp_path, monkeypatch):
    data = tmp_path / "data"
    stream_ts = await kill_mid_answer(fake_slack, data, the_event(fake_slack), "EvKilled1")
    assert await abandoned(data) == [f"{STREAMS}C0001:{QUESTION_TS}:{stream_ts}:en"]  # the answer's language
    assert fake_slack.calls_to("chat.stopStream") == []  # nobody stopped it: open for good, so far

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    settings = Settings(data_dir=data, slack_api_url=fake_slack.api_url, port=_free_port())
    stop, ready = asyncio.Event(), asyncio.Event()
    server = asyncio.create_task(run_serve(settings, ["slack"], host="127.0.0.1", stop=stop,
                                           on_ready=lambda served: ready.set()))
    try:
        await asyncio.wait_for(ready.wait(), 60)
        [closed] = fake_slack.calls_to("chat.stopStream")
        assert (closed.args["channel"], closed.args["ts"]) == ("C0001", stream_ts)
        assert "restarted before this answer was finished. Please ask again." in closed.args["markdown_text"]
        assert fake_slack.streams == {}
        [message] = bot_messages(fake_slack, "C0001", QUESTION_TS)
        assert "restarted before this answer was finished" in message["text"]
    finally:
        stop.set()
        await asyncio.wait_for(server, 30)
    assert await abandoned(data) == []  # settled: the next start has nothing to close


async def test_slacks_retry_of_the_question_closes_the_dead_answer_and_answers_again(
        make_bot, fake_slack, llm, tmp_path):
    event = the_event(fake_slack)
    stream_ts = await kill_mid_answer(fake_slack, tmp_path / "data", event, "EvKilled2")  # make_bot's data dir
    fake_slack.stalls.clear()  # the file downloads at once this time
    llm.script(AGENT, final("Families of 4 qualify up to the income limit [1].", KB_DOC))
    slack = await make_bot()
    await slack.send_event(event, event_id="EvKilled2", retry_num=1)  # the dead process never answered it
    await slack.bot.drain()

    closed = fake_slack.calls_to("chat.stopStream")
    assert closed[0].args["ts"] == stream_ts and "it is answered again below" in closed[0].args["markdown_text"]
    assert fake_slack.streams == {}
    old, new = bot_messages(fake_slack, "C0001", QUESTION_TS)
    assert old["ts"] == stream_ts and "restarted before this answer was finished" in old["text"]
    assert new["text"].startswith("Families of 4 qualify")
    assert await abandoned(tmp_path / "data") == []


async def test_an_answer_showing_only_thinking_at_shutdown_is_closed_not_left_spinning(make_bot, fake_slack, llm):
    """SIGTERM past the grace period while only the "Thinking…" task shows (the model has not
    written a word yet): the stream itself gets the note; a note in a new message would leave
    it spinning."""
    llm.check_complete = False  # the stalled stream is abandoned
    llm.script(AGENT, Stream(final("Families of 4 qualify [1].", KB_DOC), stall_after=0, stall=30.0))
    slack = await make_bot(turn_timeout=60.0)
    await slack.mention("who is eligible by income?", ts=QUESTION_TS)
    for _ in range(200):  # until the model is asked (and says nothing)
        if llm.requests_for(AGENT):
            break
        await asyncio.sleep(0.05)
    await slack.bot.drain(timeout=0.2, cancel=True)

    [stopped] = fake_slack.calls_to("chat.stopStream")
    assert fake_slack.streams == {} and fake_slack.calls_to("chat.postMessage") == []
    [message] = bot_messages(fake_slack, "C0001", QUESTION_TS)
    assert message["ts"] == stopped.args["ts"]
    assert message["text"] == "_askdesk was restarted before this answer was finished. Please ask again._"


# --- the state store's side: which claims a dead holder left -------------------------------------


async def test_sqlite_lists_only_unsettled_unexpired_claims_of_dead_holders_under_a_prefix(tmp_path):
    import sqlite3

    path = tmp_path / "state.sqlite"
    state = SQLiteState(path)
    await state.open()
    dead = 2 ** 22 + 12345  # above the default pid_max: no such process
    with sqlite3.connect(path) as db:
        db.executemany("INSERT INTO claims VALUES (?, 7, ?, ?, ?)", [
            ("slack:stream:C1:1.1:2.1", dead, 0, 1e12),  # left open
            ("slack:stream:C1:1.2:2.2", dead, 1, 1e12),  # stopped, then the holder died
            ("slack:stream:C1:1.3:2.3", dead, 0, 1.0),  # expired
            ("slack:stream:C1:1.4:2.4", 1, 0, 1e12),  # pid 1 runs: still at work
            ("slack:streamer", dead, 0, 1e12),  # another prefix
            ("slack:message:C1:1.1", dead, 0, 1e12),
        ])
    await state.claim("slack:stream:C2:1.5:2.5", 60)  # ours, at work
    assert await state.abandoned("slack:stream:") == ["slack:stream:C1:1.1:2.1"]
    assert await state.abandoned("slack:stream:C1:1.1:") == ["slack:stream:C1:1.1:2.1"]
    assert await state.abandoned("slack:stream:C1:1.2:") == []
    assert await state.claim("slack:stream:C1:1.1:2.1", 60)  # taken over, then
    assert await state.abandoned("slack:stream:") == []  # no longer abandoned
    await state.close()


async def test_postgres_lists_the_unsettled_claims_of_a_replica_that_disconnected(postgres_url):
    import asyncpg

    from agent.state.base import OWNER
    from agent.state.migrations import LOCK_SPACE
    from agent.state.postgres import PostgresState

    state = PostgresState(postgres_url)
    await state.open()
    other = OWNER + 1 if OWNER < 2 ** 31 - 1 else OWNER - 1
    replica = await asyncpg.connect(postgres_url)  # the other replica, present while connected
    await replica.execute("SELECT pg_advisory_lock($1, $2)", LOCK_SPACE, other)
    await replica.execute("INSERT INTO claims VALUES ('slack:stream:C1:1.1:2.1', $1, false, 1e12), "
                          "('slack:stream:C1:1.2:2.2', $1, true, 1e12), ('slack:stream:C1:1.3:2.3', $1, false, 1), "
                          "('slack:message:C1:1.1', $1, false, 1e12)", other)
    await state.claim("slack:stream:C2:1.5:2.5", 60)  # ours, at work
    assert await state.abandoned("slack:stream:") == []  # its holder is at work
    await replica.close()  # what kill -9 does to its connection
    assert await state.abandoned("slack:stream:") == ["slack:stream:C1:1.1:2.1"]
    assert await state.abandoned("slack:stream:C9:") == []
    await state.close()
