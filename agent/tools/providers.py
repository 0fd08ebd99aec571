"""Tools that come from outside askdesk's capabilities: the tools of the MCP servers named in
ASKDESK_MCP_SERVERS (agent/tools/mcp.py), and whatever provider joins them later.

A provider's tools are known only once it has been asked (an MCP server lists its tools when
askdesk connects to it), so a turn context cannot register them when it is built, as it does a
capability's. `ProvidedTools.ready()` asks every provider once, before the agent's first prompt,
and adds what they offer to the context's registry and schemas; a provider that cannot answer
now (its server is down) offers nothing, costs at most its timeout, and is asked again on a
later turn. Providers are per process: built once per runtime, closed with it.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent.tools.base import ToolRegistry
from agent.tools.provided import ProvidedTool, ToolProvider

if TYPE_CHECKING:
    from agent.runtime import Runtime

log = logging.getLogger("askdesk.tools")

_KEY = ("tool_providers", None)  # where a runtime keeps its providers (Runtime.caches)


def tool_providers(runtime: "Runtime") -> list[ToolProvider]:
    """This runtime's providers, built once and closed with it. No SDK is imported and nothing
    connected when none is configured; a broken configuration is one ERROR line, never a turn's
    failure (`askdesk tools` shows the error)."""
    if runtime is None:  # a service without a store (tests of the turn alone)
        return []
    if _KEY not in runtime.caches:
        providers: list[ToolProvider] = []
        from agent.tools.mcp import McpConfigError, mcp_providers

        try:
            providers.extend(mcp_providers(runtime.settings))
        except McpConfigError as exc:
            log.error("%s: the agent has no MCP tools", exc)
        runtime.caches[_KEY] = providers
        for provider in providers:
            runtime.closes(provider.aclose)
    return runtime.caches[_KEY]


@dataclass
class ProvidedTools:
    """One turn context's share of the providers' tools: registered into its registry and
    appended to its schemas (the list the agent prompt renders) once each provider has answered."""

    providers: list[ToolProvider]
    registry: ToolRegistry
    specs: list[dict[str, Any]]
    _joined: set[str] = field(default_factory=set)

    async def ready(self) -> None:
        """Ask every provider not yet heard from, together (one timeout at most, not one each)."""
        waiting = [p for p in self.providers if p.name not in self._joined]
        if not waiting:
            return
        offered = await asyncio.gather(*(_ask(p) for p in waiting))
        for provider, tools in zip(waiting, offered):
            if tools is None:
                continue  # unreachable now: asked again on a later turn
            for tool in tools:
                if self.registry.tools.get(tool.name) is tool:
                    continue  # another turn on this context registered it meanwhile
                if tool.name in self.registry.tools:
                    log.warning("tool %s of %s is not offered: another tool has that name", tool.name, provider.name)
                    continue
                self.registry.register(tool)
                self.specs.append(tool.schema())
            self._joined.add(provider.name)


async def _ask(provider: ToolProvider) -> list[ProvidedTool] | None:
    try:
        return await provider.tools()
    except Exception as exc:  # noqa: BLE001 - a provider's bug never costs the turn
        log.warning("tool provider %s failed: %s", provider.name, type(exc).__name__)
        return None
