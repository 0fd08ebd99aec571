"""The console's own settings (agent/config.py: `PluginSettings`, env `ASKDESK_CONSOLE_*`)."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from pydantic import Field, SecretStr

from agent.config import PluginSettings

SURFACE = "console"  # `askdesk serve console`


class ConsoleSettings(PluginSettings):
    """The web admin console ([Console](console.md)): `askdesk serve console`."""

    section = SURFACE

    issuer: str | None = Field(
        None, description="The OpenID Connect issuer admins sign in with: `https://slack.com` (Sign in with Slack) "
        "or `https://login.microsoftonline.com/<tenant id>/v2.0` (Microsoft Entra ID); unset = the bootstrap token only.")
    client_id: str | None = Field(None, description="The OpenID Connect client id (Slack app's Client ID, Entra "
                                  "app registration's Application (client) ID).")
    client_secret: SecretStr | None = Field(None, description="The OpenID Connect client secret; from the "
                                            "environment or a secret store, never committed.")
    port: int = Field(8080, ge=0, le=65535, description="Port the console listens on.")
    public_url: str | None = Field(None, description="The console's address as browsers reach it (`https://askdesk"
                                   ".example.org`): the sign-in redirect is `<public_url>/auth/callback`, and an "
                                   "https address makes cookies Secure; unset = http://localhost:<port>.")
    session_hours: float = Field(12.0, gt=0, description="A signed-in admin's session lasts this long.")
    report_fresh_s: float = Field(60.0, ge=0, description="The report's figures are computed again when older than "
                                  "this (the stale ones are shown meanwhile); 0 = at every page view.")


def is_loopback(url: str) -> bool:
    """A URL on this machine (development, tests): the only place plain http is accepted."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def secure_url(url: str) -> bool:
    """https, or http on the loopback interface."""
    scheme = urlsplit(url).scheme
    return scheme == "https" or (scheme == "http" and is_loopback(url))
