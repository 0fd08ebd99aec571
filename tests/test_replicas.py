"""Two real `askdesk serve slack teams` processes sharing one PostgreSQL (a server this test run
starts) behind a load balancer that is free to send anything anywhere: a Slack event delivered
to both is answered once, a retry after the first replica is killed mid-turn is answered by the
other, a user's rate limit counts questions on both, and a Teams follow-up on one replica sees
the history written by the other. The replicas call the recording fake Slack API, the fake
Teams connector and the fake LLM server of this process. (~15 s: two processes start.)"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import dataclass

import aiohttp
import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.fakes.slack_api import (BOT_ID, BOT_USER_ID, FakeSlackAPI, event_envelope, message_event,
                                   signed_headers, SIGNING_SECRET)
from tests.fakes.teams_connector import FakeTeamsConnector, message_activity, personal_conversation
from tests.knowledge_fixtures import SMALL_KB_DOC
from tests.postgres_server import free_port
from tests.replica_cluster import Replica, ingest_small_kb, start_replica, wait_ready

AGENT, ROUTER = "openai", "groq"
RATE_LIMIT = 3


def final(answer: str) -> dict:
    return {"step": {"kind": "final_answer", "answer": answer, "confidence": 0.9,
                     "references": [{"source": SMALL_KB_DOC}]}}


@dataclass
class Cluster:
    a: Replica
    b: Replica
    slack: FakeSlackAPI
    connector: FakeTeamsConnector
    llm: FakeLLMServer
    http: aiohttp.ClientSession
    database: str

    async def present(self) -> int:
        """How many replicas hold their presence lock in the shared database (agent/state/postgres.py)."""
        import asyncpg

        from agent.state.migrations import LOCK_SPACE

        conn = await asyncpg.connect(self.database)
        try:
            return await conn.fetchval(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $1::oid "
                "AND objsubid = 2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
                LOCK_SPACE)
        finally:
            await conn.close()

    async def event(self, replica: Replica, event: dict, *, event_id: str, retry: int | None = None) -> int:
        body = json.dumps(event_envelope(event, event_id=event_id))
        headers = signed_headers(body)
        if retry is not None:
            headers |= {"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_timeout"}
        async with self.http.post(f"{replica.slack}/slack/events", data=body, headers=headers) as r:
            return r.status

    def answers(self, channel: str, ts: str, text: str) -> list[dict]:
        return [m for m in self.slack.threads.get((channel, ts), [])
                if m.get("bot_id") == BOT_ID and text in json.dumps(m)]

    async def settle(self, predicate, timeout: float = 20) -> None:
        for _ in range(int(timeout / 0.05)):
            if predicate():
                return
            await asyncio.sleep(0.05)
        raise AssertionError("timed out")


@pytest.fixture(scope="module")
async def cluster(tmp_path_factory, kb_subset_cache, postgres_server):
    root = tmp_path_factory.mktemp("replicas")
    slack, connector = await FakeSlackAPI().start(), await FakeTeamsConnector().start()
    llm = FakeLLMServer().start()
    llm.script_default(ROUTER, {"route": "knowledge", "search_query": None})
    llm.script_default(AGENT, final("Families of 4 qualify up to the income limit [1]."))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDESK_")}
    database = postgres_server.new_database()
    env |= llm.env() | {
        "ASKDESK_CONFIG": str(root / "absent.yaml"), "ASKDESK_DATABASE_URL": database,
        "ASKDESK_AGENT_MODEL": "openai/gpt-4.1-mini", "ASKDESK_ROUTER_MODEL": "groq/llama-3.1-8b-instant",
        "ASKDESK_LLM_MAX_RETRIES": "0", "ASKDESK_SLACK_API_URL": slack.api_url,
        "ASKDESK_RATE_LIMIT_PER_MINUTE": str(RATE_LIMIT), "ASKDESK_TEAMS_DEV_MODE": "true",
        "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SIGNING_SECRET, "NO_COLOR": "1",
    }
    kb = await ingest_small_kb(root / "kb-data", kb_subset_cache)
    a, b = await asyncio.gather(start_replica("replica-a", root, kb, env), start_replica("replica-b", root, kb, env))
    http = aiohttp.ClientSession()
    try:
        await asyncio.gather(wait_ready(http, a), wait_ready(http, b))
        yield Cluster(a, b, slack, connector, llm, http, database)
    finally:
        for replica in (a, b):
            if replica.proc.returncode is None:
                replica.proc.send_signal(signal.SIGTERM)
        for replica in (a, b):
            try:
                await asyncio.wait_for(replica.proc.wait(), 40)
            except asyncio.TimeoutError:
                replica.kill()
        await http.close()
        llm.stop()
        await connector.stop()
        await slack.stop()


async def test_one_event_delivered_to_both_replicas_is_answered_once(cluster):
    event = message_event(f"<@{BOT_USER_ID}> who is eligible by income?", ts="1700100000.000100", type="app_mention")
    statuses = await asyncio.gather(cluster.event(cluster.a, event, event_id="EvBoth1"),
                                    cluster.event(cluster.b, event, event_id="EvBoth1", retry=1))
    assert statuses == [200, 200]
    # the `message` copy of the same mention, to the other replica, steps aside too
    plain = message_event(f"<@{BOT_USER_ID}> who is eligible by income?", ts="1700100000.000100")
    assert await cluster.event(cluster.b, plain, event_id="EvBoth2") == 200
    await cluster.settle(lambda: cluster.answers("C0001", "1700100000.000100", "Families of 4"))
    await asyncio.sleep(1.0)  # time for a duplicate to show up, if there were one
    assert len(cluster.answers("C0001", "1700100000.000100", "Families of 4")) == 1


async def test_a_users_rate_limit_counts_questions_on_both_replicas(cluster):
    for i, replica in enumerate([cluster.a, cluster.b, cluster.a, cluster.b]):
        event = message_event(f"<@{BOT_USER_ID}> who is eligible by income? ({i})", ts=f"1700200000.00010{i}",
                              type="app_mention", user="U-RATE")
        assert await cluster.event(replica, event, event_id=f"EvRate{i}") == 200
        if i < RATE_LIMIT:  # one at a time: the order of hits is the order sent
            await cluster.settle(lambda i=i: cluster.answers("C0001", f"1700200000.00010{i}", "Families"))
    notes = lambda: [c for c in cluster.slack.calls_to("chat.postEphemeral")  # noqa: E731
                     if c.args.get("user") == "U-RATE" and "again in" in c.args.get("text", "")]
    await cluster.settle(notes)
    assert not cluster.answers("C0001", "1700200000.000103", "Families")


async def test_a_teams_follow_up_on_the_other_replica_sees_the_first_answer(cluster):
    conversation = personal_conversation("29:user-replicas")
    first = message_activity(cluster.connector.service_url, "who is eligible by income?",
                             conversation=conversation, user="29:user-replicas")
    async with cluster.http.post(f"{cluster.a.teams}/api/messages", json=first) as r:
        assert r.status == 200
    await cluster.settle(lambda: len(cluster.connector.sent_messages(conversation["id"])) >= 1)
    await asyncio.sleep(0.3)
    asked = len(cluster.llm.requests_for(AGENT))
    follow_up = message_activity(cluster.connector.service_url, "what about a family of 6?",
                                 conversation=conversation, user="29:user-replicas")
    async with cluster.http.post(f"{cluster.b.teams}/api/messages", json=follow_up) as r:
        assert r.status == 200
    await cluster.settle(lambda: len(cluster.llm.requests_for(AGENT)) > asked)
    request = cluster.llm.requests_for(AGENT)[-1].text
    assert "what about a family of 6?" in request
    assert "who is eligible by income?" in request and "Families of 4 qualify" in request  # replica a's turn


async def test_one_teams_activity_delivered_to_both_replicas_is_answered_once(cluster):
    conversation = personal_conversation("29:user-twice")
    activity = message_activity(cluster.connector.service_url, "who is eligible by income?",
                                conversation=conversation, user="29:user-twice")
    for replica in (cluster.a, cluster.b):
        async with cluster.http.post(f"{replica.teams}/api/messages", json=activity) as r:
            assert r.status == 200
    answered = lambda: [m for m in cluster.connector.sent_messages(conversation["id"])  # noqa: E731
                        if "Families of 4" in json.dumps(m)]
    await cluster.settle(answered)
    await asyncio.sleep(1.0)
    assert len(answered()) == 1

async def test_a_retry_after_the_first_replica_is_killed_mid_turn_is_answered_by_the_other(cluster):
    cluster.llm.script_delay(AGENT, 60, then=final("never delivered"))
    event = message_event(f"<@{BOT_USER_ID}> who is eligible by income?", ts="1700300000.000100", type="app_mention")
    asked = len(cluster.llm.requests_for(AGENT))
    assert await cluster.event(cluster.a, event, event_id="EvKill") == 200
    await cluster.settle(lambda: len(cluster.llm.requests_for(AGENT)) > asked)  # a is mid-turn
    assert await cluster.present() == 2
    cluster.a.kill()
    await cluster.a.proc.wait()
    # PostgreSQL drops a's presence once its backend reads the closed connection: Slack's retry
    # comes seconds after the event, a loaded test machine may take a moment longer
    for _ in range(200):
        if await cluster.present() == 1:
            break
        await asyncio.sleep(0.05)
    assert await cluster.event(cluster.b, event, event_id="EvKill", retry=1) == 200  # Slack retries elsewhere
    await cluster.settle(lambda: cluster.answers("C0001", "1700300000.000100", "Families of 4"))
    assert not cluster.answers("C0001", "1700300000.000100", "never delivered")


def test_a_database_that_is_down_at_start_is_one_clear_line_and_exit_code_2(monkeypatch, tmp_path):
    from typer.testing import CliRunner

    from bot.cli import app as cli

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ASKDESK_DATABASE_URL", f"postgresql://bot:pw@127.0.0.1:{free_port()}/askdesk")
    result = CliRunner().invoke(cli, ["serve", "slack"])
    output = result.output.strip()
    assert result.exit_code == 2 and len(output.splitlines()) == 1 and "Traceback" not in output, output
    assert "cannot reach PostgreSQL at 127.0.0.1:" in output and "ASKDESK_DATABASE_URL" in output
    assert ":pw@" not in output



async def test_the_database_down_mid_turn_still_answers_and_logs_once(kb_runtime, caplog):
    """Every state call of a turn fails (claims, rate limit, history, records, the report log):
    the answer is delivered all the same, and the outage is one warning without a traceback."""
    import logging

    from agent.state import Guarded
    from agent.state.postgres import PostgresState
    from agent.turn.service import Askdesk
    from bot.turn import Incoming, TurnRunner

    class Reply:
        streams = False
        delivered: list = []

        async def progress(self, step: str) -> None: ...

        async def text(self, delta: str) -> None: ...

        async def finish(self, delivery) -> str:
            self.delivered.append(delivery)
            return "m1"

        async def note(self, text: str) -> None:
            raise AssertionError(f"a note instead of an answer: {text}")

        async def apologise(self, text: str) -> None: ...

    down = Guarded(PostgresState(f"postgresql://askdesk@127.0.0.1:{free_port()}/gone", timeout=1))
    service = Askdesk(kb_runtime.settings, kb_runtime, state=down)
    caplog.set_level(logging.INFO)
    reply = Reply()
    runner = TurnRunner(service)
    for i in range(2):
        await runner.run(Incoming(surface="teams", text="who is eligible by income?", thread_id=f"t{i}",
                                  user_id="29:u", claims=(f"teams:activity:t{i}:1",)), reply)
    await service.close()
    assert len(reply.delivered) == 2 and all(d.result.answer for d in reply.delivered)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "askdesk.state"]
    assert len(warnings) == 1 and "unavailable" in warnings[0].getMessage()
    assert not any(r.exc_info for r in caplog.records)
