"""Agent critical path: LLM round-trips, agent overhead and end-to-end `ask` latency.

    .venv/bin/python bench/bench_agent.py [--reps 3] [--e2e-questions 30] [--latency 0.3]

Data: the whole sample knowledge base (examples/texas-childcare/kb), ingested once into
.askdesk/bench-agent (the first run embeds every chunk: minutes on a laptop CPU; later runs
reuse it). Questions: the 30 `retrieval` questions of examples/texas-childcare/eval/dev.yaml.

Three configurations of the same `Askdesk.answer`:
  prefilter+prefetch  the default: the LLM-free pre-filter routes clear cases, the router's
                      search is prefetched into the agent's first prompt
  router+prefetch     the router model is asked for every message, then prefetch + agent
  router, no prefetch the classic router -> agent decides to search -> agent answers loop

1. Sequential LLM round-trips per knowledge answer (in-process FunctionModel).
2. Agent overhead per turn: wall time minus model time minus retrieval time (the function
   model answers instantly; retrieval results of the warm-up pass are replayed, so what is
   left is the agent's own work). Includes routing rules, prompt rendering, step handling,
   SQLite memory read + write, the tracing no-op.
3. End-to-end `ask` latency through the real openai SDK against a local stand-in endpoint
   (bench/openai_stub.py) that sleeps `--latency` s per call (shows that model round-trips
   are the critical path).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.openai_stub import OpenAIStub

import agent.tools.formatted_context as formatted_context
from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.state.sqlite import SQLiteState
from agent.messages import ChatMessage
from agent.providers.function import FunctionModel
from agent.runtime import Runtime
from agent.turn.service import Askdesk, AskRequest, ServiceModels
from agent.turn.stages import STAGES
from agent.yamlio import safe_load
from bench.variants import ROUTER_FIRST, ROUTER_NO_PREFETCH

ROOT = Path(__file__).resolve().parent.parent

KB = ROOT / "examples" / "texas-childcare" / "kb"
DEV = ROOT / "examples" / "texas-childcare" / "eval" / "dev.yaml"
DATA = ROOT / ".askdesk" / "bench-agent"
# the same service with other turn stages (bench/variants.py), not flags on production classes
CONFIGS = {
    "prefilter+prefetch": dict(stages=STAGES),
    "router+prefetch": dict(stages=ROUTER_FIRST),
    "router, no prefetch": dict(stages=ROUTER_NO_PREFETCH),
}


def routed_text(prompt: str) -> str:
    return prompt.rsplit("Message to route:", 1)[-1].strip()


def scripted_reply(kind: str, text: str, has_evidence: bool) -> dict[str, Any]:
    """What a well-behaved model answers: route knowledge; search first unless evidence is there."""
    if kind == "RouterDecision":
        return {"route": "knowledge", "search_query": routed_text(text)}
    if has_evidence:
        return {"step": {"kind": "final_answer", "answer": "Scripted answer.", "references": [], "confidence": 0.8}}
    return {"step": {"kind": "tool_calls", "calls": [{"name": "get_formatted_context", "arguments": {"query": "q"}}]}}


def well_behaved(messages: list[ChatMessage], response_model: type) -> dict[str, Any]:
    """The FunctionModel's function: `scripted_reply` for the messages a model is sent."""
    evidence = "Results already retrieved" in messages[0].content or any(m.role == "tool" for m in messages)
    return scripted_reply(response_model.__name__, messages[-1].content, evidence)


class RetrievalClock:
    """Wraps get_formatted_context (used by classification, the prefetch and the tool) with a timer.

    With `replay`, a query seen before gets its recorded result back instead of a new search,
    so the overhead bench measures the agent alone (no embedder or Qdrant threads competing
    for the CPU with the event loop on a busy machine)."""

    def __init__(self, *, replay: bool = False) -> None:
        self.seconds = 0.0
        self.replay = replay
        self._seen: dict[tuple, Any] = {}
        self._original = formatted_context.get_formatted_context

    def install(self) -> None:
        original = self._original

        async def timed(runtime, query, top_k=5, **kwargs):
            started = time.perf_counter()
            try:
                key = (query, top_k, kwargs.get("collection"))
                if self.replay and key in self._seen:
                    return self._seen[key]
                result = await original(runtime, query, top_k, **kwargs)
                self._seen[key] = result
                return result
            finally:
                self.seconds += time.perf_counter() - started

        formatted_context.get_formatted_context = timed


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


async def prepare(settings: Settings) -> Runtime:
    runtime = Runtime.open(settings)
    started = time.perf_counter()
    report = await ingest(runtime, [KB])
    print(f"knowledge base: {report.files} files, {report.chunks} chunks, "
          f"{len(report.updated)} (re)embedded in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    return runtime


async def bench_inprocess(runtime: Runtime, questions: list[str], reps: int) -> list[tuple]:
    clock = RetrievalClock(replay=True)  # rep 0 searches for real, later reps replay
    clock.install()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, options in CONFIGS.items():
            model = FunctionModel(well_behaved)
            settings = runtime.settings.model_copy(update={"data_dir": Path(tmp) / name})
            service = Askdesk(settings, runtime, state=SQLiteState(Path(tmp) / f"{name}.sqlite"),
                              models=ServiceModels(router=model, agent=model, notice=None), **options)
            calls: list[int] = []
            overhead: list[float] = []
            routes: dict[str, int] = {}
            for rep in range(reps + 1):  # rep 0 warms caches and is not recorded
                for i, question in enumerate(questions):
                    clock.seconds = 0.0
                    before = len(model.calls)
                    started = time.perf_counter()
                    result = await service.answer(AskRequest(text=question, surface="bench", thread_id=f"{rep}-{i}"))
                    wall = time.perf_counter() - started
                    if rep == 0:
                        continue
                    routes[result.route] = routes.get(result.route, 0) + 1
                    calls.append(len(model.calls) - before)
                    in_model = sum(c.usage.latency_ms for c in model.calls[before:] if c.usage) / 1000
                    overhead.append((wall - in_model - clock.seconds) * 1000)
            await service.close()
            rows.append((name, statistics.mean(calls), max(calls), pct(overhead, 0.5), pct(overhead, 0.95), routes))
    formatted_context.get_formatted_context = clock._original
    return rows


async def bench_e2e(runtime: Runtime, questions: list[str], latency: float) -> list[tuple]:
    def reply(kind: str, messages: list[dict[str, Any]]) -> dict:
        evidence = ("Results already retrieved" in (messages[0].get("content") or "")
                    or any("tool_result" in str(m.get("content")) for m in messages))
        return scripted_reply(kind, messages[-1].get("content") or "", evidence)

    clock = RetrievalClock()
    clock.install()
    rows = []
    with OpenAIStub(reply, latency=latency) as server, tempfile.TemporaryDirectory() as tmp:
        os.environ.update(server.env())
        for name, options in CONFIGS.items():
            settings = runtime.settings.model_copy(update={
                "data_dir": Path(tmp) / name, "agent_model": "openai/gpt-4.1-mini", "router_model": "openai/gpt-4.1-nano"})
            service = Askdesk(settings, runtime, state=SQLiteState(Path(tmp) / f"{name}.sqlite"), **options)
            await service.answer(AskRequest(text=questions[0], surface="bench", thread_id="warm"))
            latencies, calls, retrieval = [], [], []
            for i, question in enumerate(questions):
                clock.seconds = 0.0
                started = time.perf_counter()
                result = await service.answer(AskRequest(text=question, surface="bench", thread_id=f"e2e-{i}"))
                latencies.append((time.perf_counter() - started) * 1000)
                retrieval.append(clock.seconds * 1000)
                calls.append(result.llm_calls)
            await service.close()
            rows.append((name, statistics.mean(calls), pct(latencies, 0.5), pct(latencies, 0.95), pct(retrieval, 0.5)))
    formatted_context.get_formatted_context = clock._original
    return rows


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=3, help="passes over the dev questions (in-process benches)")
    parser.add_argument("--e2e-questions", type=int, default=30, help="dev questions for the end-to-end bench")
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the fake LLM sleeps per call")
    args = parser.parse_args()

    for name in [n for n in os.environ if n.startswith(("OPENAI_", "GROQ_", "GEMINI_", "GOOGLE_", "LANGSMITH_", "LANGCHAIN_"))]:
        del os.environ[name]  # never reach a real provider or LangSmith from a benchmark
    dev = safe_load(DEV.read_text(encoding="utf-8"))
    questions = [item["question"] for item in dev["retrieval"]]
    runtime = await prepare(Settings(data_dir=DATA))
    try:
        rows = await bench_inprocess(runtime, questions, args.reps)
        print(f"\n1-2. In-process, scripted instant model, {len(questions)} dev questions x {args.reps}")
        print(f"{'configuration':<22} {'LLM calls/answer':>16} {'max':>4} {'overhead p50 ms':>16} {'p95 ms':>8}  routes")
        for name, mean_calls, max_calls, p50, p95, routes in rows:
            print(f"{name:<22} {mean_calls:>16.2f} {max_calls:>4} {p50:>16.2f} {p95:>8.2f}  {routes}")

        e2e = await bench_e2e(runtime, questions[: args.e2e_questions], args.latency)
        print(f"\n3. End to end (real openai SDK -> fake server sleeping {args.latency * 1000:.0f} ms per call), "
              f"{args.e2e_questions} dev questions")
        print(f"{'configuration':<22} {'LLM calls':>10} {'p50 ms':>9} {'p95 ms':>9} {'retrieval p50 ms':>17}")
        for name, mean_calls, p50, p95, retr in e2e:
            print(f"{name:<22} {mean_calls:>10.2f} {p50:>9.0f} {p95:>9.0f} {retr:>17.0f}")
    finally:
        await runtime.close()


if __name__ == "__main__":
    asyncio.run(main())
