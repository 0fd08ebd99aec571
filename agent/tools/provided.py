"""What a tool provider is and what it offers (agent/tools/providers.py asks them; the MCP
servers of agent/tools/mcp.py are one): shapes only, so a provider imports nothing that builds."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from agent.tools.base import Tool


@dataclass
class ProvidedTool(Tool):
    """A tool from a provider: where it comes from (`askdesk tools`) and whether it changes
    something (such a tool never runs without the asker's confirmation)."""

    provider: str = ""

    @property
    def changes(self) -> bool:
        """It changes something (`reads_only=False`): it runs only once the asker confirms."""
        return not self.reads_only


class ToolProvider(Protocol):
    """Something that offers the agent tools it learns about at run time."""

    name: str

    async def tools(self) -> list[ProvidedTool] | None:
        """Its tools (listed once, then the same list); None: it cannot be reached now."""

    def problem(self) -> str | None:
        """Why it offers nothing now, in one line (None: nothing is wrong)."""

    async def aclose(self) -> None:
        """Close what it opened (connections, child processes)."""
