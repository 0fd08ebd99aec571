"""Tracing: a strict no-op without a key; with one, runs reach LANGSMITH_ENDPOINT (a local
recording server here), carry thread id and surface, and `trace_redact` hides message text."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from aiohttp import web

from agent.turn.loop import run_agent
from agent.state.memory import MemoryState
from agent.prompts import default_prompts
from agent.turn.service import Askdesk, AskRequest, ServiceModels
from agent.tracing import NOOP, Tracer, redact
from tests.test_agent_loop import ScriptedModel, final, make_registry, tool_calls

SECRET = "SECRET-QUESTION-TEXT"


def test_redact_replaces_text_but_keeps_structure_and_ids():
    data = {
        "text": SECRET,
        "route": "knowledge",
        "messages": [{"role": "user", "content": SECRET}],
        "nested": {"answer": "SECRET ANSWER", "llm_calls": 2, "tool": "get_formatted_context"},
        "arguments": {"query": SECRET},
    }
    out = redact(data)
    dumped = json.dumps(out)
    assert SECRET not in dumped and "SECRET ANSWER" not in dumped
    assert out["route"] == "knowledge" and out["nested"]["llm_calls"] == 2
    assert out["nested"]["tool"] == "get_formatted_context"
    assert out["messages"][0]["content"].startswith("[redacted")
    assert out["text"] == f"[redacted {len(SECRET)} chars]"


def test_without_a_key_tracing_is_a_noop_with_no_client(monkeypatch):
    import langsmith

    def no_client(*a, **k):
        raise AssertionError("a LangSmith client was created without a key")

    monkeypatch.setattr(langsmith, "Client", no_client)
    tracer = Tracer()
    assert not tracer.enabled
    span = tracer.turn("turn", {"text": "x"}, metadata={"thread_id": "t"})
    assert span is NOOP and span.child("c") is NOOP
    span.end({"answer": "y"})
    tracer.flush()


class RecordingLangSmith:
    """Just enough of the LangSmith API for the client's batch uploads."""

    def __init__(self) -> None:
        self.runs: list[dict] = []
        self.raw: list[bytes] = []
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        body = await request.read()
        if request.path.endswith("/info"):
            return web.json_response({"version": "0.0", "batch_ingest_config": {
                "use_multipart_endpoint": False, "size_limit": 100, "size_limit_bytes": 20_000_000,
                "scale_up_qsize_trigger": 1000, "scale_up_nthreads_limit": 1, "scale_down_nempty_trigger": 4}})
        self.raw.append(body)
        if request.path.endswith("/runs/batch"):
            payload = json.loads(body)
            self.runs.extend(payload.get("post", []) + payload.get("patch", []))
        return web.json_response({})

    def start(self) -> None:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()

            async def boot() -> None:
                app = web.Application()
                app.router.add_route("*", "/{tail:.*}", self.handle)
                runner = web.AppRunner(app, access_log=None)
                await runner.setup()
                site = web.TCPSite(runner, "127.0.0.1", 0)
                await site.start()
                self.port = site._server.sockets[0].getsockname()[1]

            loop.run_until_complete(boot())
            ready.set()
            loop.run_forever()

        threading.Thread(target=run, daemon=True).start()
        ready.wait(5)

    def wait_for(self, n: int, timeout: float = 10) -> None:
        deadline = time.monotonic() + timeout
        while len(self.runs) < n and time.monotonic() < deadline:
            time.sleep(0.05)


@pytest.fixture(scope="module")
def langsmith_server():
    server = RecordingLangSmith()
    server.start()
    return server


@pytest.fixture
def traced(monkeypatch, langsmith_server):
    langsmith_server.runs.clear()
    langsmith_server.raw.clear()
    monkeypatch.setenv("LANGSMITH_API_KEY", "test-key")
    monkeypatch.setenv("LANGSMITH_ENDPOINT", f"http://127.0.0.1:{langsmith_server.port}")
    return langsmith_server


async def test_service_turn_is_traced_with_thread_and_surface(traced, settings):
    service = Askdesk(settings, runtime=None, state=MemoryState(),
                      models=ServiceModels(router=None, agent=None, notice=None))
    assert service.tracer.enabled
    result = await service.answer(AskRequest(text="hello", surface="teams", thread_id="conv-42"))
    assert result.route == "smalltalk"
    service.tracer.flush()
    traced.wait_for(2)
    by_name = {r["name"]: r for r in traced.runs}
    root = by_name["askdesk turn"]
    assert root["extra"]["metadata"]["thread_id"] == "conv-42"
    assert root["extra"]["metadata"]["surface"] == "teams"
    assert root["outputs"]["route"] == "smalltalk"
    assert by_name["router"]["parent_run_id"] == root["id"]


async def test_model_calls_and_tools_are_child_runs_and_text_is_redacted(traced):
    tracer = Tracer(redact_text=True)
    span = tracer.turn("askdesk turn", {"text": SECRET}, metadata={"thread_id": "t", "surface": "cli"})
    model = ScriptedModel(tool_calls(("lookup", {"query": SECRET})), final("SECRET-ANSWER"))
    await run_agent(model=model, registry=make_registry(), prompts=default_prompts(), question=SECRET, history=[],
                    found=[], max_iterations=3, domain="d", span=span)
    span.end({"answer": "SECRET-ANSWER", "route": "knowledge"})
    tracer.flush()
    traced.wait_for(4)
    names = sorted(r["name"] for r in traced.runs)
    assert names == ["agent model #1", "agent model #2", "askdesk turn", "tool:lookup"]
    everything = b"".join(traced.raw).decode()
    assert "SECRET" not in everything
    assert "[redacted" in everything
