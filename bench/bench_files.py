"""Files attached to a question: what a 20-page PDF adds to an answer, and how fast a 50 MB
file is refused.

    .venv/bin/python bench/bench_files.py [--rounds 5]

One process: the real Askdesk (embedded Qdrant with one knowledge document), the real Slack
app through Bolt's HTTP endpoint with the real slack_sdk client, the fake Slack Web API hosting
the files the way Slack does (`url_private_download`, bot token), and the fake LLM server
(300 ms per model call, whatever the prompt's length: a real model also spends time reading
the file's passages, about 3,000 tokens more, which this does not count).

1. A mention with a 20-page PDF (72 KB, about 62,000 characters of text) vs the same mention
   without it, in alternating rounds: event -> the answer's last message in Slack. The
   difference, paired per round, is what the file costs: download, pypdf's text extraction,
   chunking and picking the passages, a longer prompt (target < 2 s).
2. Inside that: reading the PDF (the ingestion loader) and picking its passages, timed alone.
3. A 50 MB PDF declared by Slack (`size`): event -> the one-line refusal in Slack, and how many
   download requests were made (target < 1 s, none).
4. A 50 MB file whose size was not declared, served without a Content-Length: event -> the
   refusal; the download stops at the limit (ASKDESK_FILE_MAX_MB, 10 MB).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from agent.config import Settings  # noqa: E402
from agent.runtime import Runtime  # noqa: E402
from agent.turn.service import Askdesk  # noqa: E402
from tests.fakes import FakeLLMServer  # noqa: E402
from tests.fakes.pdf import make_pdf, report_pages  # noqa: E402
from tests.fakes.slack_api import BOT_USER_ID, FakeSlackAPI, SlackHarness, message_event  # noqa: E402

KB_DOC = ROOT / "examples" / "texas-childcare" / "kb" / "bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md"
NEEDLE = "The travel reimbursement deadline for field staff is 30 June 2026."
QUESTION = "when is the travel reimbursement deadline for field staff?"
MODEL_S = 0.3
AGENT = "openai"
REPLY = {"step": {"kind": "final_answer", "answer": "The deadline is 30 June 2026 [1].", "confidence": 0.9,
                  "references": [{"source": "ops-report.pdf"}]}}


def ms(value: float | None) -> str:
    return "—" if value is None else f"{value * 1000:.0f}"


def table(rows: list[tuple], header: tuple) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip()
                     for row in [header, tuple("-" * w for w in widths), *rows])


class Seen:
    """The first time the fake Slack API received a call whose arguments contain a text."""

    def __init__(self, fake: FakeSlackAPI) -> None:
        self.wanted: dict[str, float | None] = {}
        fake.on_record = self.record

    def watch(self, *needles: str) -> None:
        self.wanted = {n: None for n in needles}

    def record(self, call) -> None:
        text = json.dumps(call.args, ensure_ascii=False)
        for needle, at in self.wanted.items():
            if at is None and needle in text:
                self.wanted[needle] = time.monotonic()


async def answer_time(slack: SlackHarness, fake: FakeSlackAPI, seen: Seen, n: int, files: list[dict],
                      needle: str) -> float:
    """Event -> the first Slack call carrying `needle`, for one mention with `files`."""
    seen.watch(needle)
    ts = f"{1700300000 + n}.000100"
    event = message_event(f"<@{BOT_USER_ID}> {QUESTION}", ts=ts, type="app_mention", user=f"U{n:04d}",
                          files=files)
    started = time.monotonic()
    assert await slack.send_event(event) == 200
    await slack.bot.drain(timeout=60)
    at = seen.wanted[needle]
    assert at is not None, f"nothing with {needle!r} reached Slack: {fake.methods()[-8:]}"
    return at - started


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5, help="answers with and without the PDF")
    args = parser.parse_args()
    import logging

    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)  # the fake's side of a download cut short
    logging.getLogger("askdesk.files").setLevel(logging.ERROR)  # one warning per refused download: expected here
    pdf = make_pdf(report_pages(20, needle_page=14, needle=NEEDLE))
    rows = []

    with tempfile.TemporaryDirectory() as tmp, FakeLLMServer() as llm:
        data = Path(tmp) / "data"
        os.environ.update(llm.env())
        from agent.knowledge.embed_cache import SEED_FILE, open_cache

        data.mkdir(parents=True)
        cache = open_cache(Settings(data_dir=data))
        if cache is not None:
            cache.seed_from(KB_DOC.parent.parent / SEED_FILE)
            cache.close()
        llm.script_default("groq", {"route": "knowledge", "search_query": None})
        llm.script_default(AGENT, REPLY)
        llm.set_latency(AGENT, MODEL_S)
        settings = Settings(data_dir=data, agent_model="openai/gpt-4.1-mini", router_model="groq/llama-3.1-8b-instant",
                            rate_limit_per_minute=100000, llm_max_retries=0)
        runtime = Runtime.open(settings)
        fake = await FakeSlackAPI().start()
        try:
            from agent.knowledge.ingest import ingest

            await ingest(runtime, [KB_DOC])
            askdesk = Askdesk.create(settings, runtime=runtime)
            slack = await SlackHarness.start(fake, settings, askdesk, runtime)
            seen = Seen(fake)
            try:
                await answer_time(slack, fake, seen, 0, [], "30 June 2026")  # warm-up: embedder, index, SDKs
                plain, with_pdf = [], []
                for n in range(1, args.rounds + 1):
                    plain.append(await answer_time(slack, fake, seen, 2 * n, [], "30 June 2026"))
                    report = fake.add_file("ops-report.pdf", pdf, "application/pdf")
                    with_pdf.append(await answer_time(slack, fake, seen, 2 * n + 1, [report], "30 June 2026"))
                sent = llm.requests_for(AGENT)[-1].text
                assert NEEDLE in sent, "the PDF's passage did not reach the model"
                extra = [b - a for a, b in zip(plain, with_pdf)]
                rows.append(("mention -> answer in Slack, no file", str(args.rounds), ms(statistics.median(plain)),
                             ms(max(plain)), "", ""))
                rows.append(("mention -> answer in Slack, 20-page PDF attached", str(args.rounds),
                             ms(statistics.median(with_pdf)), ms(max(with_pdf)), "", ""))
                worst = max(extra)
                rows.append(("extra latency of the PDF (paired)", str(args.rounds), ms(statistics.median(extra)),
                             ms(worst), "< 2000 ms", "PASS" if worst < 2.0 else "FAIL"))

                from agent.knowledge import attached

                reads, picks = [], []
                for _ in range(args.rounds):
                    started = time.perf_counter()
                    doc = attached.read("ops-report.pdf", "application/pdf", pdf)
                    reads.append(time.perf_counter() - started)
                    started = time.perf_counter()
                    attached.passages([doc], QUESTION, budget=settings.file_context_chars,
                                      chunk_chars=settings.chunk_chars, overlap=settings.chunk_overlap)
                    picks.append(time.perf_counter() - started)
                rows.append((f"  of which: pypdf reads the 20 pages ({len(doc.text):,} chars)", str(args.rounds),
                             ms(statistics.median(reads)), ms(max(reads)), "", ""))
                rows.append(("  of which: chunk and pick the passages", str(args.rounds), ms(statistics.median(picks)),
                             ms(max(picks)), "", ""))

                refused, downloads = [], []
                for n in range(args.rounds):
                    big = fake.add_file("scans.pdf", b"%PDF-1.4 stand-in", "application/pdf", size=50_000_000)
                    before = len(fake.calls_to("files:download"))
                    refused.append(await answer_time(slack, fake, seen, 100 + n, [big], "larger than the 10 MB"))
                    downloads.append(len(fake.calls_to("files:download")) - before)
                worst = max(refused)
                rows.append(("50 MB PDF, size declared: mention -> refusal in Slack", str(args.rounds),
                             ms(statistics.median(refused)), ms(worst), "< 1000 ms",
                             "PASS" if worst < 1.0 and not any(downloads) else "FAIL"))
                rows.append(("  download requests for it", str(args.rounds), str(max(downloads)), "", "0",
                             "PASS" if not any(downloads) else "FAIL"))

                blob = os.urandom(50_000_000)
                capped = []
                for n in range(args.rounds):
                    hidden = fake.add_file("export.csv", blob, "text/csv", chunked=True)
                    hidden.pop("size")  # not declared: only the download can tell
                    capped.append(await answer_time(slack, fake, seen, 200 + n, [hidden], "larger than the 10 MB"))
                    fake.files.pop(hidden["id"])
                worst = max(capped)
                rows.append(("50 MB CSV, size not declared, no Content-Length: -> refusal", str(args.rounds),
                             ms(statistics.median(capped)), ms(worst), "< 1000 ms", "PASS" if worst < 1.0 else "FAIL"))
            finally:
                await slack.close()
                await askdesk.close()
        finally:
            await fake.stop()
            await runtime.close()

    print(f"fake model: {MODEL_S * 1000:.0f} ms per call; 20-page PDF {len(pdf) / 1000:.0f} KB; "
          f"ASKDESK_FILE_MAX_MB 10; {args.rounds} rounds each")
    print(table(rows, ("measure", "n", "median ms", "max ms", "target", "")))


if __name__ == "__main__":
    asyncio.run(main())
