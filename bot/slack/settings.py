"""Slack's own settings (agent/config.py: `PluginSettings`): `ASKDESK_SLACK_*` and Slack's tokens
under the names Slack's docs use (`SLACK_BOT_TOKEN`, `SLACK_APP_TOKEN`, `SLACK_SIGNING_SECRET`)."""

from __future__ import annotations

from pydantic import Field, SecretStr

from agent.config import PluginSettings

SURFACE = "slack"  # the surface's name: `askdesk serve slack`, its answers' and escalations' `surface`


class SlackSettings(PluginSettings):
    """The Slack bot ([Slack](slack.md)): `askdesk serve slack`."""

    section = SURFACE

    bot_token: SecretStr | None = Field(None, validation_alias="SLACK_BOT_TOKEN", description="The Bot User OAuth Token (xoxb-…) from the app's OAuth & Permissions page; required.")
    app_token: SecretStr | None = Field(None, validation_alias="SLACK_APP_TOKEN", description="An app-level token (xapp-…, scope connections:write): Socket Mode, no public URL needed; unset = HTTP mode on ASKDESK_PORT.")
    signing_secret: SecretStr | None = Field(None, validation_alias="SLACK_SIGNING_SECRET", description="Basic Information → App Credentials; required in HTTP mode.")
    api_url: str = Field("https://slack.com/api/", description="Slack Web API base URL (tests point it at a fake).")
    channels: list[str] = Field(default_factory=list, description="Channel allowlist; empty = every channel.")
    channel_collections: dict[str, str] = Field(default_factory=dict, description="channel id -> knowledge collection.")
    follow_ups: bool = Field(True, description="In a channel thread askdesk answered, answer the asker's follow-ups without a new mention (other people still mention it).")
    thread_requires_mention: bool = Field(True, description="In channel threads, other people's messages are answered only when they mention the bot; false = any reply in a thread the bot is in.")
    streaming: bool = Field(
        True,
        description="Stream Slack answers with chat.startStream/appendStream/stopStream; false (or a workspace "
        "without streaming, for a cool-down) = post a placeholder, then update it.",
    )
    private_command: str = Field(
        "/askdesk",
        description="Slash command that asks privately (`/askdesk how much leave do I have?`): the answer only "
        "the asker sees, never stored. Must match a slash command in the Slack app manifest; empty = off.",
    )
    suggested_prompts: list[str] = Field(
        default_factory=list,
        description="Suggested prompts shown when a user opens askdesk's messages tab in Slack (at most 4); unset = "
        "the domain file's `suggested_prompts`, else questions about the knowledge base's biggest documents, "
        "plus each registry command's example.",
    )

    def secret(self, name: str) -> str | None:
        """A token's value (None: unset or empty)."""
        value = getattr(self, name)
        return (value.get_secret_value() or None) if value is not None else None
