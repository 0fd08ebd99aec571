"""Teams' own settings (agent/config.py: `PluginSettings`): `ASKDESK_TEAMS_*`, and the bot's
credentials under the Teams SDK's own names (`CLIENT_ID`, `CLIENT_SECRET`, `TENANT_ID`)."""

from __future__ import annotations

from pydantic import AliasChoices, Field, SecretStr

from agent.config import PluginSettings

SURFACE = "teams"  # the surface's name: `askdesk serve teams`, its answers' and escalations' `surface`


class TeamsSettings(PluginSettings):
    """The Microsoft Teams bot ([Teams](teams.md)): `askdesk serve teams`."""

    section = SURFACE

    client_id: str | None = Field(None, validation_alias="CLIENT_ID", description="The bot's Microsoft Entra app id; required unless dev_mode.")
    client_secret: SecretStr | None = Field(None, validation_alias="CLIENT_SECRET", description="Its client secret; required unless dev_mode.")
    tenant_id: str | None = Field(None, validation_alias="TENANT_ID", description="The directory id (single-tenant bots); unset = multi-tenant.")
    port: int = Field(3978, description="Port of the Teams messaging endpoint (POST /api/messages) of `askdesk serve teams`.")
    dev_mode: bool = Field(
        False,
        description="Local development only: accept Teams activities without JWT validation and without "
        "CLIENT_ID/CLIENT_SECRET (the SDK's unauthenticated-requests switch); prints a warning at start.",
    )
    streaming: bool = Field(
        True,
        description="Stream answers in Teams personal chats (progress updates, then the text); false = typing "
        "indicator and one message, as in channels and group chats.",
    )
    suggested_prompts: list[str] = Field(
        default_factory=list,
        description="Suggested prompts of the Teams welcome message in personal chats (at most 3 are shown); unset = "
        "as for Slack.",
    )
    escalation_channel: str | None = Field(
        None,
        validation_alias=AliasChoices("ASKDESK_ESCALATION_CHANNEL_TEAMS", "ASKDESK_TEAMS_ESCALATION_CHANNEL"),
        description="The Teams conversation for \"Ask a person\" of questions asked on Teams, when Slack and Teams "
        "both run (ASKDESK_ESCALATION_CHANNEL is then the Slack one); with only one of the two set, the other "
        "surface's questions go there too.",
    )
