"""`askdesk serve teams` and `askdesk serve slack teams`: start-up checks (one clear line, no
traceback), both surfaces in one process over one Askdesk, one serving process per data dir,
and the `askdesk teams package` zip."""

from __future__ import annotations

import asyncio
import json
import struct
import zipfile

import aiohttp
import pytest
from typer.testing import CliRunner

from agent.config import Settings
from bot.cli import app as cli
from bot.commands.serve import Served, StartupError, run_serve
from tests.fakes.slack_api import BOT_USER_ID, SIGNING_SECRET, FakeSlackAPI, event_envelope, message_event, signed_headers
from tests.fakes.teams_connector import FakeTeamsConnector, message_activity, personal_conversation

BOT_GUID = "0b8b3c2e-4a4e-4b8e-9d7a-2f5d1c3e9a10"


def _one_line_error(result) -> str:
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert "Traceback" not in output and len(output.splitlines()) == 1, output
    return output


def test_no_credentials_and_no_dev_mode_refuses_to_start(monkeypatch, tmp_path):
    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    error = _one_line_error(CliRunner().invoke(cli, ["serve", "teams"]))
    assert "CLIENT_ID and CLIENT_SECRET not set" in error and "ASKDESK_TEAMS_DEV_MODE" in error
    assert not (tmp_path / "data").exists()  # nothing opened for a setup that cannot start


def test_unknown_surface_is_one_clear_line():
    assert "unknown surface 'discord'" in _one_line_error(CliRunner().invoke(cli, ["serve", "discord"]))


async def _wait_ready(task: asyncio.Task, ready: list[Served]) -> Served:
    for _ in range(600):
        if ready:
            return ready[0]
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    raise AssertionError("serve did not start")


@pytest.fixture
async def fakes():
    slack, teams = await FakeSlackAPI().start(), await FakeTeamsConnector().start()
    yield slack, teams
    await teams.stop()
    await slack.stop()


async def test_slack_and_teams_served_by_one_process_over_one_askdesk(fakes, monkeypatch, tmp_path, capsys):
    fake_slack, connector = fakes
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    settings = Settings(data_dir=tmp_path / "data", slack_api_url=fake_slack.api_url, port=0, teams_port=0,
                        teams_dev_mode=True)
    stop, ready = asyncio.Event(), []
    server = asyncio.create_task(run_serve(settings, ["slack", "teams"], host="127.0.0.1", stop=stop,
                                           on_ready=ready.append))
    try:
        served = await _wait_ready(server, ready)
        assert served.slack.services.askdesk is served.teams.askdesk is served.askdesk  # one core, one store
        assert "WITHOUT authentication" in capsys.readouterr().err  # dev mode says so at start

        # a second serve on the same data dir stops at once, with the holder and the way out
        from agent.store import StoreInUse

        with pytest.raises(StoreInUse, match=r"in use by another askdesk process \(pid \d+") as refused:
            await run_serve(settings, ["teams"], host="127.0.0.1", stop=asyncio.Event())
        from agent.store.lock import in_use_message

        hint = in_use_message(settings.data_dir, {**refused.value.holder, "command": "askdesk serve slack"})
        assert "askdesk serve slack teams" in hint  # what the user sees when the holder is a bot

        async with aiohttp.ClientSession() as http:
            event = message_event(f"<@{BOT_USER_ID}> who is eligible?", ts="1700009100.000100", type="app_mention")
            body = json.dumps(event_envelope(event))
            async with http.post(f"http://127.0.0.1:{served.slack_port}/slack/events", data=body,
                                 headers=signed_headers(body)) as r:
                assert r.status == 200
            conversation = personal_conversation("29:user-both")
            activity = message_activity(connector.service_url, "who is eligible?", conversation=conversation,
                                        user="29:user-both")
            async with http.post(f"http://127.0.0.1:{served.teams_port}/api/messages", json=activity) as r:
                assert r.status == 200
        await served.slack.drain()
        await served.teams.drain()
        # no LLM key and an empty knowledge base: both still answer (search-only)
        assert any(m.get("bot_id") for m in fake_slack.threads.get(("C0001", "1700009100.000100"), []))
        assert connector.sent_messages(conversation["id"])
    finally:
        stop.set()
        await asyncio.wait_for(server, 15)
    # the data dir is free again once the first process stopped
    stop2, ready2 = asyncio.Event(), []
    again = asyncio.create_task(run_serve(settings.model_copy(update={"teams_port": 0}), ["teams"], host="127.0.0.1",
                                          stop=stop2, on_ready=ready2.append))
    await _wait_ready(again, ready2)
    stop2.set()
    await asyncio.wait_for(again, 15)


async def test_busy_teams_port_is_a_clear_error(monkeypatch, tmp_path):
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        settings = Settings(data_dir=tmp_path / "data", teams_port=busy.getsockname()[1], teams_dev_mode=True)
        with pytest.raises(StartupError, match="cannot listen on 127.0.0.1:.* ASKDESK_TEAMS_PORT"):
            await run_serve(settings, ["teams"], host="127.0.0.1", stop=asyncio.Event())


# --- the app package -----------------------------------------------------------------------------

REQUIRED = ["$schema", "manifestVersion", "version", "id", "developer", "name", "description", "icons", "accentColor"]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])


def test_teams_package_writes_a_valid_app_zip(tmp_path, monkeypatch):
    from tests.knowledge_fixtures import DEMO_REGISTRY

    monkeypatch.setenv("ASKDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ASKDESK_REGISTRIES", str(DEMO_REGISTRY))  # its command and compose-box search
    out = tmp_path / "pkg" / "askdesk.zip"
    result = CliRunner().invoke(cli, ["teams", "package", "--bot-id", BOT_GUID.upper(), "--out", str(out),
                                      "--domain", "https://abc123.devtunnels.ms/api/messages"])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as package:
        assert sorted(package.namelist()) == ["color.png", "manifest.json", "outline.png"]  # all at the root
        manifest = json.loads(package.read("manifest.json"))
        assert _png_size(package.read("color.png")) == (192, 192)
        assert _png_size(package.read("outline.png")) == (32, 32)
    # the fields the Teams schema requires, with their limits
    assert all(key in manifest for key in REQUIRED)
    assert manifest["id"] == BOT_GUID and manifest["manifestVersion"] in manifest["$schema"]
    assert {"name", "websiteUrl", "privacyUrl", "termsOfUseUrl"} <= set(manifest["developer"])
    assert len(manifest["name"]["short"]) <= 30 and len(manifest["name"]["full"]) <= 100
    assert len(manifest["description"]["short"]) <= 80 and len(manifest["description"]["full"]) <= 4000
    assert manifest["icons"] == {"color": "color.png", "outline": "outline.png"}
    [bot] = manifest["bots"]
    assert bot["botId"] == BOT_GUID and set(bot["scopes"]) == {"personal", "team", "groupChat"}
    assert any(c["title"] == "facility" for lst in bot["commandLists"] for c in lst["commands"])
    [extension] = manifest["composeExtensions"]
    [command] = extension["commands"]
    assert extension["botId"] == BOT_GUID and command["type"] == "query" and command["id"] == "facility"
    assert command["parameters"][0]["name"] == "query"
    assert manifest["validDomains"] == ["abc123.devtunnels.ms"]
    assert "${{" not in json.dumps(manifest)

    monkeypatch.delenv("ASKDESK_REGISTRIES")  # a deployment without a registry offers no search
    assert CliRunner().invoke(cli, ["teams", "package", "--bot-id", BOT_GUID, "--out", str(out)]).exit_code == 0
    with zipfile.ZipFile(out) as package:
        manifest = json.loads(package.read("manifest.json"))
    assert "composeExtensions" not in manifest or not manifest["composeExtensions"]
    assert not any(c["title"] == "facility" for lst in manifest["bots"][0]["commandLists"] for c in lst["commands"])


def test_teams_package_rejects_a_bad_bot_id(tmp_path):
    error = _one_line_error(CliRunner().invoke(cli, ["teams", "package", "--bot-id", "my-bot",
                                                     "--out", str(tmp_path / "x.zip")]))
    assert "not a Microsoft Entra app id" in error and not (tmp_path / "x.zip").exists()
