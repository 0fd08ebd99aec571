"""Token streaming: how soon the answer's first words reach the user, and what it costs.

    .venv/bin/python bench/bench_streaming.py [--rounds 3]

One process: the real Askdesk (embedded Qdrant with one knowledge document), the fake LLM
server speaking the real OpenAI wire format (the agent model writes a 200-token answer:
300 ms to the first token, then 40 tokens/s), and per surface, in the same run:

- Slack: a signed `app_mention` through Bolt's HTTP endpoint, the real slack_sdk client
  against the fake Slack Web API. "before" = `stream_answers=false` (the whole answer
  arrives after the model's last token, the old behaviour; the fake model then answers in
  one response after the same 300 ms + 40 tokens/s), "after" = streamed.
  Measured: Slack event -> first answer text in Slack, the model's first answer token ->
  that text (target <= 150 ms), and Slack API calls per streamed answer (target: the first
  text, then at most 1 append per second of writing, plus start/stop).
- Teams (personal chat): a message activity through the Teams SDK app, the SDK's stream
  against the fake Bot Connector: activity -> first answer text in Teams, and stream
  updates carrying text per answer.
- Flow (Slack and Teams): the longest wait between two consecutive updates carrying answer
  text while the model writes (target < 1.2 s: no freeze), and the most API calls to the
  stream in any 1-second window (target: at most 1 text update a second once the first
  text is shown; Slack's chat.appendStream tier and the Teams stream throttle).
- Terminal: `askdesk chat` (its real loop) on a terminal console: question -> first answer
  text on screen, and screen redraws per answer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

from rich.console import Console  # noqa: E402

from agent.config import Settings  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.turn.service import Askdesk  # noqa: E402
from tests.fakes import FakeLLMServer  # noqa: E402
from tests.fakes.screen import Screen  # noqa: E402
from tests.fakes.slack_api import FakeSlackAPI, SlackHarness  # noqa: E402

KB_DOC = ROOT / "examples" / "texas-childcare" / "kb" / "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
QUESTION = "What is the annual income eligibility limit for a family of 4 in BCY 2026?"
FIRST_TOKEN, TOKENS_PER_S, ANSWER_TOKENS = 0.3, 40.0, 200
AGENT = "openai"


def make_answer(tokens: int) -> str:
    """A cited answer of `tokens` tokens (4 characters each, as the fake server counts)."""
    sentences, i = [], 0
    while len(" ".join(sentences)) < tokens * 4:
        i += 1
        sentences.append(f"For a family of {i + 1}, the annual limit rises with each added member "
                         f"and the weekly figure follows it [1].")
    return " ".join(sentences)[: tokens * 4 - 1].rstrip() + "."


ANSWER = make_answer(ANSWER_TOKENS)
REPLY = {"step": {"kind": "final_answer", "answer": ANSWER, "confidence": 0.9,
                  "references": [{"source": KB_DOC.name}]}}
NEEDLE = ANSWER[:12]


def whole_reply_seconds() -> float:
    """How long the model takes to write the whole reply (what a non-streamed call waits for)."""
    return FIRST_TOKEN + len(json.dumps(REPLY, ensure_ascii=False)) / 4 / TOKENS_PER_S


def first_answer_token(llm: FakeLLMServer) -> float | None:
    """When the streamed reply's first answer character left the model (monotonic)."""
    request = llm.requests_for(AGENT)[-1]
    for at, text in request.chunks:
        start = text.find('"answer": "')
        if start >= 0 and len(text) > start + len('"answer": "'):
            return at
    return None


def model_end(llm: FakeLLMServer) -> float:
    """When the model's last streamed chunk left it (infinity for an answer not streamed)."""
    chunks = llm.requests_for(AGENT)[-1].chunks
    return chunks[-1][0] if chunks else math.inf


def longest_gap(times: list[float]) -> float | None:
    """The longest wait between two consecutive times (None with fewer than two)."""
    times = sorted(times)
    return max((b - a for a, b in zip(times, times[1:])), default=None)


def most_in_a_second(times: list[float]) -> int:
    """The most times in any 1-second window [t, t + 1)."""
    times = sorted(times)
    return max((sum(1 for u in times[i:] if u < t + 1.0) for i, t in enumerate(times)), default=0)


def settings_for(data: Path, stream: bool, **extra) -> Settings:
    return Settings(data_dir=data, agent_model="openai/gpt-4.1-mini", router_model="groq/llama-3.1-8b-instant",
                    stream_answers=stream, rate_limit_per_minute=100000, llm_max_retries=0, **extra)


# --------------------------------------------------------------------------- Slack


async def slack_round(slack: SlackHarness, fake: FakeSlackAPI, llm: FakeLLMServer, n: int) -> dict:
    fake.reset()
    ts = f"{1700200000 + n}.000100"
    started = time.monotonic()
    assert await slack.mention(QUESTION, ts=ts, user=f"U{n:04d}") == 200
    await fake.wait_for("chat.stopStream", timeout=60)
    await slack.bot.drain()
    calls = [c for c in fake.calls if c.at >= started]
    stream = [c for c in calls if c.method in ("chat.startStream", "chat.appendStream", "chat.stopStream")]
    with_text = [c for c in stream if any(ch.get("type") == "markdown_text" and ch.get("text", "").strip()
                                          for ch in c.args.get("chunks") or [])]
    assert with_text, f"no answer text reached Slack: {[(c.method, str(c.args)[:200]) for c in calls]}"
    first = with_text[0]
    message = next(m for msgs in fake.threads.values() for m in msgs if m.get("thread_ts") == ts and m.get("bot_id"))
    assert message["text"] == ANSWER, f"the message must equal the full answer: {message['text'][:300]!r}"
    token = first_answer_token(llm)
    model_done = model_end(llm)
    appends = [c.at for c in with_text if c.method == "chat.appendStream" and c.at <= model_done]
    return {"first": first.at - started, "after_token": (first.at - token) if token else None,
            "token": (token - started) if token else None, "stream_calls": len(stream),
            "gap": longest_gap([c.at for c in with_text]),
            "window_all": most_in_a_second([c.at for c in stream]),
            "window_text": most_in_a_second(appends[1:]),
            "text_appends": sum(c.method == "chat.appendStream" for c in with_text),
            "progress_appends": sum(c.method == "chat.appendStream" and c not in with_text for c in stream)}


async def bench_slack(data: Path, runtime: Runtime, llm: FakeLLMServer, rounds: int) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for mode, stream in (("before", False), ("after", True)):
        llm.set_latency(AGENT, 0.0 if stream else whole_reply_seconds())
        fake = await FakeSlackAPI().start()
        settings = settings_for(data, stream)
        askdesk = Askdesk.create(settings, runtime=runtime)
        slack = await SlackHarness.start(fake, settings, askdesk, runtime)
        try:
            rows = []
            for n in range(rounds + 1):
                before = len(llm.requests)
                row = await slack_round(slack, fake, llm, n + (0 if stream else 500))
                row["llm_calls"] = len(llm.requests) - before
                if n:  # the first round warms the embedder and the HTTP clients
                    rows.append(row)
            out[mode] = rows
        finally:
            await slack.close()
            await askdesk.close()
            await fake.stop()
    return out


# --------------------------------------------------------------------------- Teams


async def bench_teams(data: Path, runtime: Runtime, llm: FakeLLMServer, rounds: int) -> dict[str, list[dict]]:
    from tests.fakes.teams_connector import FakeTeamsConnector, TeamsHarness, personal_conversation

    out: dict[str, list[dict]] = {}
    for mode, stream in (("before", False), ("after", True)):
        llm.set_latency(AGENT, 0.0 if stream else whole_reply_seconds())
        connector = await FakeTeamsConnector().start()
        settings = settings_for(data, stream)
        askdesk = Askdesk.create(settings, runtime=runtime)
        teams = await TeamsHarness.start(connector, settings, askdesk, runtime)
        rows = []
        try:
            for n in range(rounds + 1):
                user = f"29:bench-{mode}-{n}"
                conversation = personal_conversation(user)
                started = time.monotonic()
                await teams.say(QUESTION, conversation=conversation, user=user)
                await teams.bot.drain()
                calls = [c for c in connector.calls_in(conversation["id"]) if c.at >= started]
                texts = [c for c in calls if c.text and c.stream_type != "informative"]
                model_done = model_end(llm)
                # text updates while the model writes (after it, the SDK closes the stream: its
                # last chunk and the final message go together)
                streaming = [c.at for c in texts if c.stream_type == "streaming" and c.at <= model_done]
                [message] = connector.sent_messages(conversation["id"])
                assert message["text"] == ANSWER, f"the message must equal the full answer: {message['text'][:200]!r}"
                token = first_answer_token(llm) if stream else None
                if n:
                    rows.append({"first": texts[0].at - started, "token": (token - started) if token else None,
                                 "after_token": (texts[0].at - token) if token else None,
                                 "text_updates": sum(c.stream_type == "streaming" for c in texts),
                                 "calls": len(calls),
                                 "gap": longest_gap([c.at for c in texts]),
                                 "window_all": most_in_a_second([c.at for c in calls]),
                                 "window_text": most_in_a_second(streaming[1:])})
        finally:
            await teams.close()
            await askdesk.close()
            await connector.stop()
        out[mode] = rows
    return out


# --------------------------------------------------------------------------- terminal


async def bench_terminal(data: Path, runtime: Runtime, llm: FakeLLMServer, rounds: int) -> dict[str, list[dict]]:
    from bot.commands import chat

    out: dict[str, list[dict]] = {}
    original = chat._console
    try:
        for mode, stream in (("before", False), ("after", True)):
            llm.set_latency(AGENT, 0.0 if stream else whole_reply_seconds())
            askdesk = Askdesk.create(settings_for(data, stream), runtime=runtime)
            rows = []
            try:
                for n in range(rounds + 1):
                    screen = Screen()
                    console = Console(file=screen, force_terminal=True, width=100, color_system=None)
                    chat._console = lambda stderr=False, console=console: console
                    started = time.monotonic()
                    await chat._chat_loop(askdesk.settings, f"bench-{mode}-{n}", [QUESTION], service=askdesk)
                    first = next(at for at, text in screen.writes if ANSWER[:4] in text)
                    token = first_answer_token(llm) if stream else None
                    redraws = sum(1 for at, text in screen.writes if at >= first and text.strip())
                    if n:
                        print(f"terminal {mode}: first text {first - started:.2f} s, whole turn "
                              f"{time.monotonic() - started:.2f} s", file=sys.stderr)
                        rows.append({"first": first - started, "after_token": (first - token) if token else None,
                                     "token": (token - started) if token else None, "redraws": redraws})
            finally:
                await askdesk.close()
            out[mode] = rows
    finally:
        chat._console = original
    return out


# --------------------------------------------------------------------------- report


def med(rows: list[dict], key: str) -> float | None:
    values = [r[key] for r in rows if r.get(key) is not None]
    return statistics.median(values) if values else None


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f}"


def table(rows: list[tuple], header: tuple) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in [header, tuple("-" * w for w in widths), *rows])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="measured answers per surface and mode")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as llm:
        data = Path(tmp) / "data"
        os.environ.update(llm.env())  # the real SDKs find the fake server through their own env vars
        from agent.knowledge.embed_cache import SEED_FILE, open_cache

        data.mkdir(parents=True)
        cache = open_cache(Settings(data_dir=data))  # the sample data's shipped vectors, as `askdesk demo` does
        if cache is not None:
            cache.seed_from(KB_DOC.parent.parent / SEED_FILE)
            cache.close()
        llm.script_default("groq", {"route": "knowledge", "search_query": "income eligibility family of 4"})
        llm.script_default(AGENT, REPLY)
        llm.set_stream_pace(AGENT, first_token=FIRST_TOKEN, tokens_per_s=TOKENS_PER_S)
        runtime = Runtime.open(Settings(data_dir=data))
        try:
            from agent.knowledge.ingest import ingest

            await ingest(runtime, [KB_DOC])
            slack = await bench_slack(data, runtime, llm, args.rounds)
            teams = await bench_teams(data, runtime, llm, args.rounds)
            terminal = await bench_terminal(data, runtime, llm, args.rounds)
        finally:
            await runtime.close()

    chars = len(ANSWER)
    budget = 1 + math.ceil(ANSWER_TOKENS / TOKENS_PER_S)  # the first text, then <= 1 a second
    rows = []
    for surface, result in (("Slack", slack), ("Teams", teams), ("terminal", terminal)):
        before, after = result["before"], result["after"]
        gap = med(after, "after_token")
        rows.append((surface, "event -> first answer text", ms(med(before, "first")), ms(med(after, "first")),
                     f"{med(before, 'first') / med(after, 'first'):.1f}x sooner", "", ""))
        rows.append((surface, "model's first answer token -> first text", "—", ms(gap), "",
                     "<= 150 ms", "PASS" if gap is not None and gap <= 0.150 else "FAIL"))
    after = slack["after"]
    appends = max(r["text_appends"] for r in after)
    rows.append(("Slack", f"text appends per answer ({chars} chars)", "0", str(appends), "",
                 f"<= {budget} (first + 1/s)", "PASS" if appends <= budget else "FAIL"))
    rows.append(("Slack", "stream API calls per answer (all)", str(max(r["stream_calls"] for r in slack["before"])),
                 str(max(r["stream_calls"] for r in after)), "start + progress tasks + text + stop", "", ""))
    rows.append(("Slack", "model calls per answer", str(max(r["llm_calls"] for r in slack["before"])),
                 str(max(r["llm_calls"] for r in after)), "no extra call", "", ""))
    rows.append(("terminal", "screen redraws per answer", str(max(r["redraws"] for r in terminal["before"])),
                 str(max(r["redraws"] for r in terminal["after"])), "rich Live, <= 12/s", "", ""))
    rows.append(("Teams", "stream updates with text per answer", str(max(r["text_updates"] for r in teams["before"])),
                 str(max(r["text_updates"] for r in teams["after"])), "about 1/s, plus the final message", "", ""))
    rows.append(("Teams", "Bot Connector calls per answer (all)", str(max(r["calls"] for r in teams["before"])),
                 str(max(r["calls"] for r in teams["after"])), "informative + text updates + final", "", ""))
    for surface, result in (("Slack", slack), ("Teams", teams)):
        before, after = result["before"], result["after"]
        worst = max((r["gap"] for r in after if r["gap"] is not None), default=None)
        rows.append((surface, "longest wait between two text updates (worst round)",
                     ms(max((r["gap"] for r in before if r["gap"] is not None), default=None)), ms(worst),
                     f"median {ms(med(after, 'gap'))}", "< 1200 ms",
                     "PASS" if worst is not None and worst < 1.2 else "FAIL"))
        text_window = max(r["window_text"] for r in after)
        rows.append((surface, "most text updates in any 1 s after the first text, while the model writes", "—",
                     str(text_window), "",
                     "<= 1", "PASS" if text_window <= 1 else "FAIL"))
        rows.append((surface, "most stream API calls in any 1 s (all)", str(max(r["window_all"] for r in before)),
                     str(max(r["window_all"] for r in after)), "progress/informative + text + stop/final", "", ""))
    print(f"fake model: {FIRST_TOKEN * 1000:.0f} ms to first token, {TOKENS_PER_S:.0f} tokens/s, "
          f"{ANSWER_TOKENS}-token answer; whole reply {whole_reply_seconds():.2f} s; medians of {args.rounds} rounds")
    print(table(rows, ("surface", "measure", "before ms", "after ms", "note", "target", "")))


if __name__ == "__main__":
    asyncio.run(main())
