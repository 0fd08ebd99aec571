"""The plug-in's settings: `ASKDESK_HELLO_<FIELD>` in the environment, or a `hello:` mapping in
askdesk.yaml (agent/config.py: `PluginSettings`)."""

from __future__ import annotations

from pydantic import Field

from agent.config import PluginSettings


class HelloSettings(PluginSettings):
    section = "hello"

    offices: bool = Field(False, description="Add the office_hours capability to the deployment.")
    port: int = Field(8765, description="The port of `askdesk serve hello` (POST /chat).")
