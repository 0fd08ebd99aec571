"""Shared state (issue 21): what PostgreSQL costs per turn over SQLite, and two replicas under
duplicated deliveries.

    .venv/bin/python bench/bench_state.py [--turns 500] [--events 1000] [--twice 0.2] [--rate 50] [--llm-ms 300]

1. Per-turn state overhead: the state calls of one answered Slack turn (claim the event, claim
   the message, count the user's question, read the thread's history, save the turn, keep the
   answer record, settle both claims), `--turns` times on each backend (in-process memory,
   SQLite in a temporary data dir, PostgreSQL on a throwaway local server started here as in
   the tests). Target: PostgreSQL p50 < 5 ms above SQLite.
2. Two replicas: two real `askdesk serve slack teams` processes sharing that PostgreSQL, each
   with its own embedded copy of one knowledge document; `--events` signed app_mention events
   sent at `--rate` per second (Slack delivers at most 30,000 events an hour to an app in a
   workspace, about 8 a second: the default is six times that), each to a random replica, and
   `--twice` of them delivered to the other replica too, 0-200 ms later (a Slack retry landing
   elsewhere). Counts answers per message (target: no duplicate) and the HTTP ack latency seen
   by the sender (target p99 < 50 ms), while the replicas answer behind the acks (retrieval and
   a model call of `--llm-ms`). The baseline row is the same stream to ONE replica on SQLite
   (duplicates to that replica). The fake Slack API and the fake LLM server run on their own
   threads in this process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.messages import ChatMessage  # noqa: E402
from agent.state import AnswerRecord  # noqa: E402
from agent.state.memory import MemoryState  # noqa: E402
from agent.state.postgres import PostgresState  # noqa: E402
from agent.state.sqlite import SQLiteState  # noqa: E402
from tests.fakes import FakeLLMServer  # noqa: E402
from tests.fakes.slack_api import (BOT_ID, BOT_USER_ID, SIGNING_SECRET, FakeSlackAPI, event_envelope,  # noqa: E402
                                   message_event, signed_headers)
from tests.postgres_server import PostgresServer, bindir  # noqa: E402
from tests.replica_cluster import ingest_small_kb, start_replica, wait_ready  # noqa: E402

QUESTION = "who is eligible by income?"
ANSWER = "Families of 4 qualify up to the income limit [1]."


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def one_turn(state, i: int) -> float:
    started = time.perf_counter()
    event, message = f"slack:event:Ev{i}", f"slack:message:C1:{i}.0"
    assert await state.claim(event, 3600) and await state.claim(message, 3600)
    await state.rate_hit(f"U{i % 50}", 10_000, 60)
    await state.load("teams", f"thread-{i % 100}")
    await state.append("teams", f"thread-{i % 100}", [ChatMessage(role="user", content=QUESTION),
                                                      ChatMessage(role="assistant", content=ANSWER)])
    await state.remember_answer(AnswerRecord(answer_id=f"a{i}", route="knowledge", sources=["x.md"]),
                                conversation=f"C1:{i}.0", message_id=f"{i}.1")
    await state.settle(event, message)
    return (time.perf_counter() - started) * 1000


async def per_turn(turns: int, pg_url: str, tmp: Path) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {}
    for name, state in [("memory", MemoryState()), ("sqlite", SQLiteState(tmp / "askdesk.sqlite")),
                        ("postgres", PostgresState(pg_url))]:
        await state.open()
        for i in range(50):  # warm: connections, prepared statements
            await one_turn(state, -1 - i)
        results[name] = [await one_turn(state, i) for i in range(turns)]
        await state.close()
    return results


class ThreadLoop:
    """An event loop on a daemon thread: the fake Slack API lives here, away from the sender."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


async def replicas(events: int, twice: float, rate: float, llm_ms: float, pg_url: str | None, tmp: Path) -> dict:
    """Deliver the event stream to two replicas on PostgreSQL (`pg_url`), or to one on SQLite."""
    import aiohttp

    slack_loop = ThreadLoop()
    slack = slack_loop.run(FakeSlackAPI().start())
    llm = FakeLLMServer(latency=llm_ms / 1000).start()
    llm.script_default("groq", {"route": "knowledge", "search_query": None})
    llm.script_default("openai", {"step": {"kind": "final_answer", "answer": ANSWER, "confidence": 0.9,
                                           "references": [{"source": "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"}]}})
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDESK_")}
    env |= llm.env() | {
        "ASKDESK_CONFIG": str(tmp / "absent.yaml"),
        "ASKDESK_AGENT_MODEL": "openai/gpt-4.1-mini", "ASKDESK_ROUTER_MODEL": "groq/llama-3.1-8b-instant",
        "ASKDESK_LLM_MAX_RETRIES": "0", "ASKDESK_SLACK_API_URL": slack.api_url, "ASKDESK_RATE_LIMIT_PER_MINUTE": "0",
        "ASKDESK_TEAMS_DEV_MODE": "true", "ASKDESK_SLACK_STREAMING": "false",
        "SLACK_BOT_TOKEN": "xoxb-test", "SLACK_SIGNING_SECRET": SIGNING_SECRET, "NO_COLOR": "1",
    }
    if pg_url:
        env["ASKDESK_DATABASE_URL"] = pg_url
    run = tmp / ("pg" if pg_url else "sqlite")
    run.mkdir()
    kb = await ingest_small_kb(run / "kb", run / "no-cache")
    names = ["a", "b"] if pg_url else ["only"]
    nodes = list(await asyncio.gather(*(start_replica(n, run, kb, env) for n in names)))
    acks: list[float] = []
    rng = random.Random(21)
    twice_sent = 0
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=256)) as http:
        await asyncio.gather(*(wait_ready(http, n) for n in nodes))

        async def post(node, body: str, retry: bool, delay: float = 0.0) -> None:
            await asyncio.sleep(delay)
            headers = signed_headers(body)
            if retry:
                headers |= {"X-Slack-Retry-Num": "1", "X-Slack-Retry-Reason": "http_timeout"}
            started = time.perf_counter()
            async with http.post(f"{node.slack}/slack/events", data=body, headers=headers) as r:
                await r.read()
                assert r.status == 200, r.status
            acks.append((time.perf_counter() - started) * 1000)

        sends: list[asyncio.Task] = []
        started = time.perf_counter()
        for i in range(events):
            await asyncio.sleep(max(0.0, started + i / rate - time.perf_counter()))
            event = message_event(f"<@{BOT_USER_ID}> {QUESTION}", ts=f"1800000000.{i:06d}", type="app_mention",
                                  user=f"U{i}")
            body = json.dumps(event_envelope(event, event_id=f"EvBench{i}"))
            first = rng.choice(nodes)
            sends.append(asyncio.create_task(post(first, body, False)))
            if rng.random() < twice:
                twice_sent += 1
                other = next((n for n in nodes if n is not first), first)
                sends.append(asyncio.create_task(post(other, body, True, rng.uniform(0, 0.2))))
        await asyncio.gather(*sends)
        sent_s = time.perf_counter() - started

        def answered() -> dict[str, int]:
            counts: dict[str, int] = {}
            for (_, ts), messages in list(slack.threads.items()):
                n = sum(1 for m in list(messages) if m.get("bot_id") == BOT_ID and ANSWER[:20] in json.dumps(m))
                if n:
                    counts[ts] = n
            return counts

        deadline = time.monotonic() + 600
        while len(answered()) < events and time.monotonic() < deadline:
            await asyncio.sleep(0.5)
        all_s = time.perf_counter() - started
        await asyncio.sleep(2)  # a late duplicate would show up now
        counts = answered()
    for node in nodes:
        node.proc.terminate()
    for node in nodes:
        await node.proc.wait()
    llm.stop()
    slack_loop.run(slack.stop())
    return {"setup": "2 replicas, PostgreSQL" if pg_url else "1 process, SQLite", "events": events,
            "twice": twice_sent, "answered": len(counts), "duplicates": sum(n - 1 for n in counts.values()),
            "ack_p50": pct(acks, 0.5), "ack_p99": pct(acks, 0.99), "sent_s": sent_s, "all_s": all_s}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--twice", type=float, default=0.2)
    parser.add_argument("--rate", type=float, default=50.0, help="events per second")
    parser.add_argument("--llm-ms", type=float, default=300.0, help="fake model latency per call")
    parser.add_argument("--skip-replicas", action="store_true")
    args = parser.parse_args()
    found = bindir()
    if found is None:
        sys.exit("PostgreSQL is not installed (scripts/test installs it)")
    server = PostgresServer(found).start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            turns = await per_turn(args.turns, server.new_database(), Path(tmp))
            print(f"\nPer-turn state calls ({args.turns} turns, 9 calls each), ms")
            print(f"{'backend':<10} {'p50':>7} {'p99':>7} {'p50 over sqlite':>16}")
            base = statistics.median(turns["sqlite"])
            for name, values in turns.items():
                p50 = statistics.median(values)
                print(f"{name:<10} {p50:7.2f} {pct(values, 0.99):7.2f} {p50 - base:16.2f}")
            if not args.skip_replicas:
                rows = [await replicas(args.events, args.twice, args.rate, args.llm_ms, url, Path(tmp))
                        for url in (None, server.new_database())]
                print(f"\n{args.events} events at {args.rate:g}/s, {args.twice:.0%} delivered twice, model {args.llm_ms:g} ms")
                print(f"{'setup':<24} {'twice':>6} {'answered':>9} {'duplicates':>11} {'ack p50 ms':>11} "
                      f"{'ack p99 ms':>11} {'all answered s':>15}")
                for r in rows:
                    print(f"{r['setup']:<24} {r['twice']:>6} {r['answered']:>9} {r['duplicates']:>11} "
                          f"{r['ack_p50']:>11.1f} {r['ack_p99']:>11.1f} {r['all_s']:>15.1f}")
    finally:
        server.stop()


if __name__ == "__main__":
    asyncio.run(main())
