"""`askdesk serve slack`: start-up checks (one clear line, no traceback), HTTP mode and
Socket Mode against the fake Slack API."""

from __future__ import annotations

import asyncio
import json
import socket

import aiohttp
import pytest
from typer.testing import CliRunner

from agent.config import Settings
from bot.cli import app as cli
from bot.commands.serve import StartupError, run_slack
from tests.fakes.slack_api import BOT_USER_ID, SIGNING_SECRET, FakeSlackAPI, event_envelope, message_event


def _one_line_error(result) -> str:
    output = result.output.strip()
    assert result.exit_code == 2, output
    assert "Traceback" not in output and len(output.splitlines()) == 1, output
    return output


def test_missing_bot_token_is_one_clear_line():
    result = CliRunner().invoke(cli, ["serve", "slack"])
    assert "SLACK_BOT_TOKEN is not set" in _one_line_error(result)


def test_http_mode_without_signing_secret_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-123")
    result = CliRunner().invoke(cli, ["serve", "slack"])
    assert "SLACK_SIGNING_SECRET" in _one_line_error(result)


def test_malformed_app_token_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-123")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xoxb-wrong-kind")
    assert "xapp-" in _one_line_error(CliRunner().invoke(cli, ["serve", "slack"]))


def test_unreachable_slack_is_one_clear_line(monkeypatch):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-123")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    monkeypatch.setenv("ASKDESK_SLACK_API_URL", f"http://127.0.0.1:{port}/api/")
    assert "cannot reach the Slack API" in _one_line_error(CliRunner().invoke(cli, ["serve", "slack"]))


@pytest.fixture
async def fake_slack():
    fake = await FakeSlackAPI().start()
    yield fake
    await fake.stop()


async def test_rejected_bot_token_fails_at_start_up(fake_slack, monkeypatch, tmp_path):
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-invalid")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "secret")
    settings = Settings(data_dir=tmp_path / "data", slack_api_url=fake_slack.api_url)
    with pytest.raises(StartupError, match="rejected SLACK_BOT_TOKEN \\(invalid_auth\\)"):
        await run_slack(settings, host="127.0.0.1")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_http_mode_serves_signed_events_on_slack_events(fake_slack, monkeypatch, tmp_path):
    from tests.fakes.slack_api import signed_headers

    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", SIGNING_SECRET)
    port = _free_port()
    settings = Settings(data_dir=tmp_path / "data", slack_api_url=fake_slack.api_url, port=port)
    stop = asyncio.Event()
    server = asyncio.create_task(run_slack(settings, host="127.0.0.1", stop=stop))
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as http:
            for _ in range(200):
                try:
                    async with http.get(f"{base}/healthz") as r:
                        if r.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            body = json.dumps({"type": "url_verification", "challenge": "abc123", "token": "t"})
            async with http.post(f"{base}/slack/events", data=body, headers=signed_headers(body)) as r:
                assert r.status == 200 and "abc123" in await r.text()
            async with http.post(f"{base}/slack/events", data=body,
                                 headers=signed_headers(body, secret="forged")) as r:
                assert r.status == 401
            for content_type in ("application/json", "application/x-www-form-urlencoded"):
                async with http.post(f"{base}/slack/events", data="",
                                     headers=signed_headers("", content_type=content_type)) as r:
                    assert r.status == 400, content_type  # an empty signed body is no Slack payload
            async with http.get(f"{base}/healthz") as r:
                assert (await r.json()) == {"ok": True, "status": "ready"}  # warmed up before serving
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)


async def test_socket_mode_receives_events_and_answers(fake_slack, monkeypatch, tmp_path):
    """No LLM key and an empty knowledge base: the bot still acks the envelope and answers."""
    monkeypatch.setenv("SLACK_BOT_TOKEN", "xoxb-test")
    monkeypatch.setenv("SLACK_APP_TOKEN", "xapp-test")
    event = message_event(f"<@{BOT_USER_ID}> who is eligible?", ts="1700009000.000100", type="app_mention")
    fake_slack.socket_envelopes.append({
        "envelope_id": "env-1", "type": "events_api", "accepts_response_payload": False,
        "payload": event_envelope(event), "retry_attempt": 0, "retry_reason": "",
    })
    settings = Settings(data_dir=tmp_path / "data", slack_api_url=fake_slack.api_url)
    stop = asyncio.Event()
    server = asyncio.create_task(run_slack(settings, host="127.0.0.1", stop=stop))
    try:
        for _ in range(200):
            if fake_slack.socket_acks and fake_slack.threads.get(("C0001", "1700009000.000100")):
                if any(m.get("bot_id") for m in fake_slack.threads[("C0001", "1700009000.000100")]):
                    break
            await asyncio.sleep(0.05)
        assert fake_slack.socket_acks[0]["envelope_id"] == "env-1"
        replies = [m for m in fake_slack.threads[("C0001", "1700009000.000100")] if m.get("bot_id")]
        assert replies, fake_slack.methods()
        assert fake_slack.calls_to("apps.connections.open")[0].args["_token"] == "xapp-test"
    finally:
        stop.set()
        await asyncio.wait_for(server, 10)


def test_invalid_setting_is_one_clear_line(monkeypatch):
    monkeypatch.setenv("ASKDESK_PORT", "not-a-port")
    assert "invalid setting port" in _one_line_error(CliRunner().invoke(cli, ["serve", "slack"]))
