"""The example plug-in package (examples/plugins/askdesk-hello), installed into the test
environment as a deployment installs a plug-in (scripts/test): its surface, capability and
provider appear in `askdesk plugins`, and each works through askdesk's own machinery, with no
file of askdesk naming them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from agent.config import Settings
from agent.knowledge.ingest import ingest
from agent.plugins import plugins
from agent.prompts import default_prompts
from agent.providers.function import ScriptedModel
from agent.providers.models import ServiceModels, make_models
from agent.runtime import Runtime
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk, AskRequest
from tests.crash_child import EMBEDDER, HashEmbedder
from tests.fakes.steps import final, tool_calls

askdesk_hello = pytest.importorskip("askdesk_hello", reason="pip install ./examples/plugins/askdesk-hello (scripts/test)")

QUESTION = "when is the Austin office open?"


@pytest.fixture
async def runtime(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "leave.md").write_text("# Leave policy\n\nStaff get sixteen weeks of paid parental leave.\n",
                                   encoding="utf-8")
    rt = Runtime.open(Settings(data_dir=tmp_path / "data", embedder=EMBEDDER, embedding_cache=False))
    rt._embedders[EMBEDDER] = HashEmbedder()  # type: ignore[assignment]
    await ingest(rt, [docs])
    yield rt
    await rt.close()


def test_askdesk_plugins_lists_the_surface_the_capability_and_the_provider():
    askdesk = Path(sys.executable).with_name("askdesk")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    proc = subprocess.run([str(askdesk), "plugins", "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(proc.stdout)
    rows = {(r["kind"], r["name"]): r for r in listed["loaded"]}
    for kind, name in [("surface", "hello"), ("capability", "office_hours"), ("provider", "echo")]:
        assert rows[(kind, name)]["package"] == "askdesk-hello" and rows[(kind, name)]["plugin"] == "hello"
    assert rows[("capability", "office_hours")]["settings"] == ["ASKDESK_HELLO_OFFICES"]
    assert rows[("surface", "hello")]["settings"] == ["ASKDESK_HELLO_OFFICES", "ASKDESK_HELLO_PORT"]
    # askdesk's own capabilities are plug-ins the same way
    assert rows[("capability", "knowledge")]["package"] == rows[("capability", "registries")]["package"] == "askdesk"
    assert not [f for f in listed["failed"] if f["package"] == "askdesk-hello"]


def test_the_capability_joins_a_deployment_only_when_its_setting_is_on(runtime, monkeypatch):
    assert "office_hours" in plugins().capabilities
    off = Askdesk(runtime.settings, runtime, state=MemoryState())
    assert off.capabilities().names == ["knowledge"]
    monkeypatch.setenv("ASKDESK_HELLO_OFFICES", "true")
    on = Askdesk(runtime.settings, runtime, state=MemoryState())
    assert on.capabilities().names == ["knowledge", "office_hours"]
    assert [s["name"] for s in on.context().tool_specs] == ["get_formatted_context", "office_hours"]


async def test_its_tool_is_called_in_a_turn_through_a_scripted_model(runtime, monkeypatch):
    monkeypatch.setenv("ASKDESK_HELLO_OFFICES", "true")
    model = ScriptedModel(tool_calls(("office_hours", {"city": "Houston"})),
                          final("Austin opens at 8:00; Houston at 7:30."))
    service = Askdesk(runtime.settings, runtime, state=MemoryState(),
                      models=ServiceModels(router=None, agent=model, notice=None))
    try:
        took = await service.warm_up()
        result = await service.answer(AskRequest(text=QUESTION))
    finally:
        await service.close()
    model.assert_done()
    assert "office_hours" in took
    # claimed by its wording, searched before the model (prefetch), then called by the model
    assert result.route == "office_hours" and result.tool_calls == ["office_hours", "office_hours"]
    assert result.answer == "Austin opens at 8:00; Houston at 7:30." and result.llm_calls == 2
    first, second = (call.messages for call in model.calls)
    assert any(m.role == "tool" and "The Austin office is open Monday to Friday" in m.content for m in first)
    assert any(m.role == "tool" and m.name == "office_hours" and "The Houston office is open" in m.content
               for m in second)
    assert "office_hours" in first[0].content  # its tool is in the agent's prompt


async def test_without_a_model_its_tool_result_is_the_answer(runtime, monkeypatch):
    monkeypatch.setenv("ASKDESK_HELLO_OFFICES", "true")
    service = Askdesk(runtime.settings, runtime, state=MemoryState(),
                      models=ServiceModels(router=None, agent=None, notice="no model"))
    try:
        result = await service.answer(AskRequest(text=QUESTION))
    finally:
        await service.close()
    assert result.search_only and result.route == "office_hours"
    assert result.answer == "The Austin office is open Monday to Friday, 8:00 to 17:00."


async def test_its_provider_is_a_model_spec_like_any_other(tmp_path):
    from agent.messages import ChatMessage
    from agent.providers.base import ProviderError
    from agent.turn.steps import AgentStep

    settings = Settings(data_dir=tmp_path / "data", agent_model="echo/x")
    models = make_models(settings, default_prompts())
    assert models.agent is not None and models.notice is None  # no key needed, nothing says "search-only"
    done = await models.agent.complete([ChatMessage(role="user", content="hi?")], AgentStep)
    assert done.output.step.answer == "x: hi?" and done.usage.provider == "echo"
    with pytest.raises(ProviderError):  # it answers agent steps only (a router decision is not one)
        await models.agent.complete([ChatMessage(role="user", content="hi?")], ChatMessage)


async def test_its_surface_answers_over_http_with_its_provider(runtime, monkeypatch):
    from askdesk_hello.surface import HelloSurface
    from bot.surface import Desk
    from bot.turn import TurnRunner

    monkeypatch.setenv("ASKDESK_AGENT_MODEL", "echo/x")
    monkeypatch.setenv("ASKDESK_HELLO_OFFICES", "true")
    monkeypatch.setenv("ASKDESK_HELLO_PORT", "0")
    settings = Settings(data_dir=runtime.settings.data_dir, embedder=EMBEDDER, embedding_cache=False)
    service = Askdesk.create(settings, runtime=runtime, state=MemoryState())
    surface = HelloSurface(settings)
    stop = await surface.start(Desk(settings, service, TurnRunner(service), "127.0.0.1"))
    try:
        async with aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{surface.port}/chat"
            async with http.post(url, json={"text": QUESTION, "user": "u1"}) as response:
                assert response.status == 200
                answered = await response.json()
            async with http.post(url, json={"user": "u1"}) as response:
                assert response.status == 400
            async with http.post(url, json={"text": "how long is parental leave?", "user": "u2"}) as response:
                cited = await response.json()
    finally:
        await stop()
        await service.close()
    # the echo model answered ("<model>: <question>"), after the capability's search
    assert answered == {"answer": f"x: {QUESTION}", "references": []}
    assert cited["answer"] == "x: how long is parental leave? [1]"  # it cites the passage it was given
    assert [(r["source"], r["title"]) for r in cited["references"]] == [("leave.md", "Leave policy")]


async def test_askdesk_serve_hello_runs_it_next_to_the_others(tmp_path):
    """`askdesk serve hello`: found among the installed surfaces, started over the shared
    service, answered with the echo provider and the office_hours capability, stopped."""
    import asyncio

    from bot.commands.serve import run_serve

    settings = Settings(data_dir=tmp_path / "data", agent_model="echo/x", hello_offices=True, hello_port=0)
    stop, ready = asyncio.Event(), []
    task = asyncio.create_task(run_serve(settings, ["hello"], host="127.0.0.1", stop=stop, on_ready=ready.append))
    try:
        for _ in range(1500):
            if ready or task.done():
                break
            await asyncio.sleep(0.02)
        if task.done():
            task.result()
        served = ready[0]
        async with aiohttp.ClientSession() as http:
            async with http.post(f"http://127.0.0.1:{served.hello_port}/chat",
                                 json={"text": QUESTION, "user": "u1"}) as response:
                answered = await response.json()
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)
    assert answered == {"answer": f"x: {QUESTION}", "references": []}
    assert served.surfaces["hello"].config().offices is True
