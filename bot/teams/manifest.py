"""`askdesk teams package`: the app package Teams uploads, a zip with manifest.json,
color.png (192×192) and outline.png (32×32) at its root.

The manifest comes from the editable template teams/manifest.json (name, developer,
descriptions are the organisation's to change); `${{BOT_ID}}` becomes the bot's Microsoft
Entra app id (the app id and the bot id are the same app registration) and
`${{BOT_DOMAIN}}` the messaging endpoint's host (dropped when not given). The bot's command
list and the compose box's searches (message extension) are written from the deployment's
registry commands, so a new registry needs no manifest editing.
"""

from __future__ import annotations

import json
import re
import uuid
import zipfile
from pathlib import Path
from typing import Any

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


def command_entries(commands: list[Any]) -> tuple[list[dict], list[dict]]:
    """(the bot's command list, the compose extension's commands) for the registry commands."""
    listed, searches = [], []
    for c in commands:
        listed.append({"title": c.name, "description": f"Search {c.records}, e.g. {c.name} {c.example}"[:128]})
        listed.append({"title": f"{c.name} help", "description": f"What the {c.record} search understands"[:128]})
        if c.extension:
            searches.append({"id": c.name, "type": "query", "title": c.records.capitalize()[:32],
                             "description": f"Find {c.title} and insert a card"[:128], "initialRun": False,
                             "parameters": [{"name": "query", "title": "What and where",
                                             "description": f"e.g. {c.example}"[:128], "inputType": "text"}]})
    return listed[:10], searches[:10]


def build_manifest(template: str, bot_id: str, domain: str | None, commands: list[Any] = ()) -> dict[str, Any]:
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
    listed, searches = command_entries(list(commands))
    for bot in manifest.get("bots", []):
        for command_list in bot.get("commandLists", []):
            command_list["commands"] = [*command_list.get("commands", []), *listed][:10]
    if searches:
        extensions = manifest.setdefault("composeExtensions", [{"botId": bot_id, "commands": []}])
        extensions[0]["commands"] = [*extensions[0].get("commands", []), *searches][:10]
    else:  # no registry: no compose-box search to offer
        manifest["composeExtensions"] = [e for e in manifest.get("composeExtensions", []) if e.get("commands")]
    return manifest


def write_package(out: Path, manifest: dict[str, Any]) -> Path:
    accent = manifest.get("accentColor") or "#3B5BDB"
    out.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_DEFLATED) as package:
        package.writestr("manifest.json", json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")
        package.writestr(manifest["icons"]["color"], color_icon(accent))
        package.writestr(manifest["icons"]["outline"], outline_icon())
    return out
