"""`askdesk mcp` (askdesk as an MCP server over stdio) and `askdesk tools` (every tool the agent
can call, and where it comes from). docs/mcp.md."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

import typer

from agent.config import load_settings
from bot.commands import store_in_use


def mcp_cmd(
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Log each call on stderr."),
) -> None:
    """Serve the knowledge base and the registries to an MCP client over stdio (the client starts
    this command). Searches see only what everyone may see, unless ASKDESK_MCP_AUDIENCE says more."""
    from agent.registry.declaration import DeclarationError
    from agent.store import StoreInUse
    from bot.mcp_server import serve_stdio
    from bot.printable import printable

    logging.basicConfig(stream=sys.stderr, level=logging.INFO if verbose else logging.WARNING,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve_stdio(load_settings()))
    except StoreInUse as exc:
        raise store_in_use(exc) from None
    except DeclarationError as exc:  # a broken registry declaration: one line, as every command says it
        typer.echo(f"error: {printable(str(exc))}", err=True)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        pass


def tool_rows(settings: Any) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    """Every tool the agent can call (built in, each registry's, each MCP server's) and the MCP
    servers that offer none now, with why. Opens no store: MCP servers are asked, then closed."""
    from agent.tools.formatted_context import make_tool
    from agent.tools.mcp import mcp_providers

    knowledge = make_tool(None)  # type: ignore[arg-type]  # only its name and description are read
    rows = [_row(knowledge.name, "built in", "knowledge base", knowledge.description)]
    from agent.registry.loader import declaration_paths

    if declaration_paths(settings):
        from agent.registry.loader import load_declarations

        for decl in load_declarations(settings):
            rows.append(_row(decl.tool.name, "registry", decl.name, decl.tool.description))
    providers = mcp_providers(settings)  # McpConfigError: the caller's one line
    problems: list[dict[str, str]] = []

    async def ask() -> list[Any]:
        try:
            return await asyncio.gather(*(p.tools() for p in providers))
        finally:
            for p in providers:
                await p.aclose()

    for provider, tools in zip(providers, asyncio.run(ask()) if providers else []):
        if tools is None:
            problems.append({"server": provider.name, "error": provider.problem() or "unavailable"})
            continue
        for tool in tools:
            rows.append(_row(tool.name, "mcp", provider.name, tool.description, changes=tool.changes))
    return rows, problems


def _row(name: str, kind: str, origin: str, description: str, *, changes: bool = False) -> dict[str, Any]:
    return {"name": name, "kind": kind, "origin": origin, "changes": changes,
            "description": " ".join(description.split())}


def tools_cmd(as_json: bool = typer.Option(False, "--json", help="Print JSON: {tools, problems}.")) -> None:
    """Every tool the agent can call and where it comes from (built in, a registry, an MCP server);
    a tool that changes something is marked: it never runs without the asker's confirmation."""
    from agent.registry.declaration import DeclarationError
    from agent.tools.mcp import McpConfigError
    from bot.printable import printable

    logging.getLogger("askdesk.mcp").setLevel(logging.ERROR)  # each server's problem is printed below
    settings = load_settings()
    try:
        rows, problems = tool_rows(settings)
    except (McpConfigError, DeclarationError) as exc:
        typer.echo(f"error: {printable(str(exc))}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        typer.echo(json.dumps({"tools": rows, "problems": problems}, indent=2, ensure_ascii=False))
    else:
        width = max(len(r["name"]) for r in rows)
        for r in rows:
            where = {"built in": "built in: the knowledge base", "registry": f"registry: {r['origin']}",
                     "mcp": f"MCP server: {r['origin']}"}[r["kind"]]
            mark = "  [changes something: needs the asker's confirmation]" if r["changes"] else ""
            typer.echo(printable(f"{r['name']:<{width}}  {where}{mark}"))
        for p in problems:
            typer.echo(printable(f"unavailable: {p['error']}"), err=True)
    if problems:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("mcp")(mcp_cmd)
    app.command("tools")(tools_cmd)
