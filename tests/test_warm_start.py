"""A server reports ready only after its warm-up: /healthz says "starting" (503) until then."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from agent.config import Settings
from agent.state.memory import MemoryState
from agent.turn.service import Askdesk
from bot.teams.server import AiohttpAdapter


async def test_teams_healthz_says_starting_until_the_service_has_warmed_up(kb_runtime, tmp_path):
    service = Askdesk(Settings(data_dir=tmp_path / "svc"), kb_runtime, state=MemoryState())
    adapter = AiohttpAdapter()
    adapter.ready = lambda: service.ready
    service.starting()
    async with TestClient(TestServer(adapter.app)) as client:
        response = await client.get("/healthz")
        assert response.status == 503 and (await response.json()) == {"ok": False, "status": "starting"}
        took = await service.warm_up()
        response = await client.get("/healthz")
        assert response.status == 200 and (await response.json()) == {"ok": True, "status": "ready"}
    assert "knowledge" in took
    await service.close()


async def test_a_service_nobody_warms_is_ready_as_built(kb_runtime, tmp_path):
    service = Askdesk(Settings(data_dir=tmp_path / "svc"), kb_runtime, state=MemoryState())
    assert service.ready
    await service.close()


async def test_slack_healthz_says_starting_until_ready():
    from aiohttp import web

    from bot.slack.http import healthz

    state = {"ready": False}
    app = web.Application()
    app.router.add_get("/healthz", healthz(lambda: state["ready"]))
    async with TestClient(TestServer(app)) as client:
        assert (await client.get("/healthz")).status == 503
        state["ready"] = True
        response = await client.get("/healthz")
        assert response.status == 200 and (await response.json())["status"] == "ready"
