"""askdesk's MCP server over streamable HTTP as a surface of `askdesk serve mcp` (bot/surface.py),
registered through the `askdesk.plugins` entry point `mcp`; the server itself is bot/mcp_server.py.
It refuses to start without ASKDESK_MCP_TOKEN, before anything opens."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent.config import Settings
from agent.tools.mcp import McpSettings
from bot.surface import Desk, Stop, Surface, SurfaceError

if TYPE_CHECKING:
    from agent.plugins import Registrar


class McpSurface(Surface):
    name = "mcp"
    settings = McpSettings

    def __init__(self, settings: Settings) -> None:
        from bot.mcp_server import McpStartError, http_settings

        super().__init__(settings)
        try:
            self.mcp = http_settings()
        except McpStartError as exc:
            raise SurfaceError(str(exc)) from None

    async def start(self, desk: Desk) -> Stop:
        from bot.mcp_server import PATH, start_for

        try:
            server = await start_for(desk.askdesk, self.mcp, host=desk.host)
        except OSError as exc:
            raise SurfaceError(f"cannot listen on {desk.host}:{self.mcp.port} ({exc.strerror or exc}): set "
                               "ASKDESK_MCP_PORT to a free port.") from None
        self.port = server.port
        desk.say(f"MCP server listening on http://{desk.host}:{server.port}{PATH}")
        return server.stop

    @classmethod
    def env_variables(cls) -> list[str]:
        return ["ASKDESK_MCP_TOKEN", "ASKDESK_MCP_PORT", "ASKDESK_MCP_AUDIENCE"]

    @classmethod
    def missing_env(cls) -> list[str]:
        try:
            token = McpSettings().token
        except ValueError:  # a value that does not parse: `askdesk serve mcp` names it
            return []
        return [] if token is not None and token.get_secret_value().strip() else ["ASKDESK_MCP_TOKEN"]


def register(r: "Registrar") -> None:
    r.surface(McpSurface)
