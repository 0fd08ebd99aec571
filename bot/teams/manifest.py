"""`askdesk teams package`: the app package Teams uploads, a zip with manifest.json,
color.png (192×192) and outline.png (32×32) at its root.

The manifest comes from the editable template teams/manifest.json (name, developer,
descriptions are the organisation's to change); `${{BOT_ID}}` becomes the bot's Microsoft
Entra app id (the app id and the bot id are the same app registration) and
`${{BOT_DOMAIN}}` the messaging endpoint's host (dropped when not given).
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from pathlib import Path
from typing import Any

from bot.teams.extension import COMMAND_ID
from bot.teams.icons import color_icon, outline_icon

TEMPLATE = Path("teams") / "manifest.json"
CHECKOUT_TEMPLATE = Path(__file__).resolve().parents[2] / "teams" / "manifest.json"
_DOMAIN = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+(:\d+)?$")


class ManifestError(Exception):
    """Bad input for the package: printed as one line."""


def find_template(path: Path | None) -> Path:
    for candidate in ([path] if path else [TEMPLATE, CHECKOUT_TEMPLATE]):
        if candidate.is_file():
            return candidate
    raise ManifestError(f"no manifest template at {path or TEMPLATE}: run from the askdesk checkout or pass --template.")


def clean_domain(domain: str) -> str:
    host = re.sub(r"^https?://", "", domain.strip().lower()).split("/", 1)[0]
    if not _DOMAIN.match(host):
        raise ManifestError(f"--domain {domain!r} is not a host name such as askdesk.example.org or "
                            "abc123.devtunnels.ms.")
    return host


def build_manifest(template: str, bot_id: str, domain: str | None) -> dict[str, Any]:
    try:
        bot_id = str(uuid.UUID(bot_id.strip()))
    except ValueError:
        raise ManifestError(f"--bot-id {bot_id!r} is not a Microsoft Entra app id (a GUID like "
                            "00000000-0000-0000-0000-000000000000).") from None
    text = template.replace("${{BOT_ID}}", bot_id)
    try:
        manifest = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ManifestError(f"the manifest template is not valid JSON (line {exc.lineno}: {exc.msg}).") from None
    domains = [d for d in manifest.get("validDomains", []) if d != "${{BOT_DOMAIN}}"]
    if domain:
        domains.append(clean_domain(domain))
    manifest["validDomains"] = list(dict.fromkeys(domains))
    commands = [c.get("id") for ext in manifest.get("composeExtensions", []) for c in ext.get("commands", [])]
    if COMMAND_ID not in commands:
        raise ManifestError(f"the template's compose extension must keep the command id {COMMAND_ID!r} "
                            "(the bot answers that search).")
    return manifest


def write_package(out: Path, manifest: dict[str, Any]) -> Path:
    accent = manifest.get("accentColor") or "#3B5BDB"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as package:
        package.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        package.writestr(manifest["icons"]["color"], color_icon(accent))
        package.writestr(manifest["icons"]["outline"], outline_icon())
    return out
