"""Knowledge updates while the bot runs: `askdesk ingest` (the real console script, another
process) hands its job to the serving process over the admin channel while 20 questions are
in flight. Zero questions fail, and the changed text is searchable as soon as the ingest
command reports done."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import stat

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.knowledge.search import search
from agent.runtime import Runtime
from agent.turn.service import Askdesk, AskRequest
from bot.admin import SOCKET_NAME
from bot.commands.serve import start_admin_channel
from tests.conftest import SAMPLE_FACILITIES, SAMPLE_KB, seed_embeddings
from tests.test_store_concurrency import EXIT_IN_USE, cli_env, run_cli
from tests.visibility import visible_files

DOCS = ["bcy2025-psoc-chart-twc-qa.md", "parent-tx3c-attendance-help-english-twc-qa.md"]
MARKER = "Zephyrine voucher code QX-4471"
QUESTIONS = [
    "what is the weekly parent share for a family of 3?",
    "how do parents record attendance in TX3C?",
    "who do I call about KinderConnect?",
    "income limit for a family of 4",
]


async def test_ingest_is_handed_to_the_running_bot_while_questions_are_answered(tmp_path):
    data = seed_embeddings(tmp_path / "data")
    kb = tmp_path / "kb"
    kb.mkdir()
    for name in DOCS:
        shutil.copy(SAMPLE_KB / name, kb / name)
    settings = Settings(data_dir=data)
    runtime = Runtime.open(settings)
    service = Askdesk.create(settings, runtime)
    channel = await start_admin_channel(settings, runtime)
    try:
        await ingest(runtime, [kb])
        assert channel is not None
        sock = data / SOCKET_NAME
        assert stat.S_IMODE(os.stat(sock).st_mode) == 0o600

        changed = kb / DOCS[1]
        changed.write_text(changed.read_text(encoding="utf-8")
                           + f"\n\n## New in 2026\n\nParents now quote the {MARKER} at sign-in.\n", encoding="utf-8")

        stop = asyncio.Event()
        answered: list[int] = [0] * 20
        failures: list[str] = []

        async def asker(i: int) -> None:
            while not stop.is_set():
                try:
                    result = await service.answer(AskRequest(text=QUESTIONS[i % len(QUESTIONS)], thread_id=f"t{i}"))
                    if not result.references:
                        failures.append(f"asker {i}: no sources in {result.answer[:80]!r}")
                    answered[i] += 1
                except Exception as exc:  # any failure counts
                    failures.append(f"asker {i}: {type(exc).__name__}: {exc}")
                await asyncio.sleep(0)

        askers = [asyncio.create_task(asker(i)) for i in range(20)]
        await asyncio.sleep(0.5)  # questions in flight before the ingest starts
        code, out, err = await run_cli(["ingest", str(kb), "--json"], cli_env(data), timeout=240)
        # the command has reported done: the new text must be searchable right now
        hits = await search(runtime, MARKER, top_k=3)
        stop.set()
        await asyncio.gather(*askers)
        # progress bars driven by the bot's events, then the summary
        code2, out2, err2 = await run_cli(["ingest", str(kb)], cli_env(data), timeout=240)
    finally:
        if channel is not None:
            await channel.close()
        await service.close()
        await runtime.close()

    assert code == 0, err
    assert "the running bot" in err and "Traceback" not in out + err
    assert '"updated": [\n    "' + DOCS[1] in out  # the report of the job, printed by the CLI
    assert hits and MARKER in hits[0].text and hits[0].source == DOCS[1]
    assert code2 == 0 and "2 unchanged" in out2 and "Traceback" not in out2 + err2, err2
    assert failures == []
    assert all(n >= 1 for n in answered), answered
    assert not (data / SOCKET_NAME).exists()  # removed when the bot stops


async def test_facility_registry_updates_are_handed_over_too(tmp_path):
    data = seed_embeddings(tmp_path / "data")
    settings = Settings(data_dir=data)
    runtime = Runtime.open(settings)
    channel = await start_admin_channel(settings, runtime)
    try:
        code, out, err = await run_cli(["ingest-facilities", str(SAMPLE_FACILITIES)], cli_env(data), timeout=240)
        count = await runtime.store.count("facilities")
    finally:
        if channel is not None:
            await channel.close()
        await runtime.close()
    assert code == 0 and "Traceback" not in out + err, err
    assert "121 of 121 rows loaded" in out and count == 121


async def test_a_bad_request_or_a_stale_socket_never_crashes(tmp_path):
    """A stale socket (bot killed) means no server: the one in-use line from a live holder, or
    a normal local run once nobody holds the store. Garbage on the socket gets an error reply."""
    data = tmp_path / "data"
    settings = Settings(data_dir=data)
    runtime = Runtime.open(settings)
    channel = await start_admin_channel(settings, runtime)
    assert channel is not None
    try:
        reader, writer = await asyncio.open_unix_connection(str(data / SOCKET_NAME))
        writer.write(b"this is not json\n")
        await writer.drain()
        reply = await reader.readline()
        writer.close()
        assert b'"code":2' in reply and b"did not understand" in reply
    finally:
        await channel.close()
    # a socket file left behind by a killed bot, while another (non-serving) process holds the store
    import socket as socket_module

    stale = socket_module.socket(socket_module.AF_UNIX)
    stale.bind(str(data / SOCKET_NAME))
    stale.close()
    try:
        code, out, err = await run_cli(["ingest", str(SAMPLE_KB / DOCS[0])], cli_env(data))
    finally:
        await runtime.close()
    assert code == EXIT_IN_USE and "Traceback" not in out + err and "in use" in err


async def test_askdesk_serve_slack_runs_the_admin_channel(monkeypatch, tmp_path):
    """The serve hook itself: while `run_slack` serves (HTTP mode, fake Slack API), an
    `askdesk ingest` from another process is run by the bot; the socket goes when it stops."""
    from bot.commands.serve import run_slack
    from tests.fakes.slack_api import SIGNING_SECRET, FakeSlackAPI

    fake = await FakeSlackAPI().start()
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    data = seed_embeddings(tmp_path / "data")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings = Settings(data_dir=data, slack_api_url=fake.api_url, port=port)
    stop = asyncio.Event()
    server = asyncio.create_task(run_slack(settings, host="127.0.0.1", stop=stop))
    try:
        for _ in range(400):
            if (data / SOCKET_NAME).is_socket() or server.done():
                break
            await asyncio.sleep(0.05)
        assert (data / SOCKET_NAME).is_socket()
        code, out, err = await run_cli(["ingest", str(SAMPLE_KB / DOCS[0]), "--json"], cli_env(data), timeout=240)
    finally:
        stop.set()
        await asyncio.wait_for(server, 30)
        await fake.stop()
    assert code == 0 and "the running bot" in err and f'"{DOCS[0]}"' in out, err
    assert not (data / SOCKET_NAME).exists()


class SlowEmbedder:
    """Half a second per batch: a job that is still running when the bot stops."""

    name = "test:slow"
    dim = 4

    async def embed_documents(self, texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0.5)
        return [[1.0, float(len(t) % 7), 0.5, 0.1] for t in texts]

    async def embed_query(self, text: str) -> list[float]:
        return [1.0, 0.0, 0.5, 0.1]


async def test_a_bot_stopping_mid_job_tells_the_client_to_run_it_again(tmp_path):
    from bot.admin.channel import AdminChannel
    from bot.admin.client import LOST, submit
    from bot.admin.protocol import JobRequest

    data = tmp_path / "data"
    settings = Settings(data_dir=data, embedder="test:slow", embedding_cache=False)
    runtime = Runtime.open(settings)
    runtime._embedders["test:slow"] = SlowEmbedder()
    channel = await AdminChannel.start(settings, runtime)
    assert channel is not None
    started = asyncio.Event()

    def on_event(ev) -> None:
        if ev.event == "chunks_done":
            started.set()

    request = JobRequest(op="ingest", paths=[str(SAMPLE_KB)], as_json=True)
    client = asyncio.create_task(submit(data, request, on_event))
    try:
        await asyncio.wait_for(started.wait(), 60)
        await channel.close()  # what `askdesk serve` does on SIGTERM
        output = await asyncio.wait_for(client, 30)
        assert output is not None and output.code == 1 and output.stderr == [LOST]
        # what search sees is consistent: every file whole (one version, every chunk) or absent
        files = await visible_files(runtime)
        assert files and all(not f.mixed and not f.partial for f in files.values())
    finally:
        await runtime.close()
