"""What an MCP tool call costs over the tool's own time: an echo tool called directly, through the
`mcp` SDK's session, and as the agent calls it (askdesk's tool registry: argument check against
the server's schema, the call, the fenced result), over stdio and over streamable HTTP.

    .venv/bin/python bench/bench_mcp.py [--calls 50]

The echo server runs in its own process, as a real one would: started by the client over stdio
(this file with `--serve stdio`), or serving HTTP on a loopback port (`--serve http`), stateless
as `askdesk serve mcp` is. Each row is the median of `--calls` calls after one warm-up call;
connecting (process start, handshake, tool listing) is reported apart, since askdesk does it once
per server and process. Target: under 50 ms of overhead per call. The load average is printed
because machines are shared: compare runs taken at similar load.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGET_MS = 50.0
TEXT = "the quick brown fox jumps over the lazy dog"


def echo(text: str) -> str:
    """Say the text back (the tool's own work)."""
    return f"echo: {text}"


def serve(transport: str, port: int) -> None:
    """The echo server, in this process (a child of the benchmark)."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("bench", log_level="WARNING")
    server.add_tool(echo)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port, stateless_http=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def wait_listening(port: int, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        except OSError:
            await asyncio.sleep(0.05)
    raise RuntimeError(f"the HTTP echo server did not listen on {port}")


async def median_ms(call, n: int) -> float:
    await call()  # warm-up
    times = []
    for _ in range(n):
        started = time.perf_counter()
        await call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


async def measure(transport: str, n: int) -> dict[str, float]:
    from agent.tools.base import ToolRegistry
    from agent.tools.mcp import McpServerTools, ServerSpec

    child = None
    if transport == "stdio":
        spec = ServerSpec(name="bench", command=sys.executable, args=[__file__, "--serve", "stdio"])
    else:
        port = free_port()
        child = subprocess.Popen([sys.executable, __file__, "--serve", "http", "--port", str(port)],
                                 stderr=subprocess.DEVNULL)
        await wait_listening(port)
        spec = ServerSpec(name="bench", url=f"http://127.0.0.1:{port}/mcp")
    provider = McpServerTools(spec)
    try:
        started = time.perf_counter()
        tools = await provider.tools()
        connect_ms = (time.perf_counter() - started) * 1000
        assert tools, provider.problem()
        registry = ToolRegistry()
        for tool in tools:
            registry.register(tool)
        session = provider._session

        async def direct() -> None:
            echo(TEXT)

        async def sdk() -> None:
            result = await session.call_tool("echo", {"text": TEXT})
            assert not result.is_error

        async def agent() -> None:
            result = await registry.run("bench__echo", {"text": TEXT})
            assert "echo: " + TEXT in result.text, result.text

        row = {"direct": await median_ms(direct, n), "sdk": await median_ms(sdk, n),
               "agent": await median_ms(agent, n), "connect": connect_ms}
    finally:
        await provider.aclose()
        if child is not None:
            child.terminate()
            child.wait(timeout=10)
    return row


async def main(n: int) -> None:
    rows = {t: await measure(t, n) for t in ("stdio", "http")}
    print(f"MCP tool call overhead: median of {n} calls of an echo tool, server in its own process "
          f"(load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} CPUs)\n")
    print("| transport | tool itself | SDK `call_tool` | agent's tool call | overhead | target "
          "| connect + list (once) |")
    print("|---|---|---|---|---|---|---|")
    for transport, r in rows.items():
        overhead = r["agent"] - r["direct"]
        verdict = "ok" if overhead < TARGET_MS else "MISSED"
        print(f"| {transport} | {r['direct'] * 1000:.1f} µs | {r['sdk']:.2f} ms | {r['agent']:.2f} ms | "
              f"{overhead:.2f} ms | < {TARGET_MS:.0f} ms {verdict} | {r['connect']:.0f} ms |")
    print("\n" + json.dumps({t: {k: round(v, 3) for k, v in r.items()} for t, r in rows.items()}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--serve", choices=("stdio", "http"), help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.serve:
        serve(options.serve, options.port)
    else:
        asyncio.run(main(options.calls))
