"""askdesk-hello: one plug-in of each kind askdesk loads (docs/plugins.md).

askdesk finds this module through the entry point in pyproject.toml and calls `register(r)`:
what is registered is listed by `askdesk plugins`. Registering imports no heavy library (the
HTTP server is imported when the surface starts), so a one-shot `askdesk ask` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from askdesk_hello.capability import OfficeHours
from askdesk_hello.provider import EchoProvider
from askdesk_hello.surface import HelloSurface

if TYPE_CHECKING:
    from agent.plugins import Registrar

__all__ = ["EchoProvider", "HelloSurface", "OfficeHours", "register"]


def register(r: "Registrar") -> None:
    r.surface(HelloSurface)
    r.capability(OfficeHours)
    r.provider(EchoProvider)
