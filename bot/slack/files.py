"""The files of a Slack message (`event["files"]`), as bot/files.py fetches them.

Slack serves a file's bytes at its `url_private_download` to a request carrying the bot token
(scope `files:read`). The token goes to Slack's own hosts only (and to the Web API's host when
ASKDESK_SLACK_API_URL points elsewhere, as in tests): an event cannot send it anywhere else.
A file Slack does not let the bot fetch (hidden by the workspace's plan, a Slack Connect file
that needs `files.info`, a deleted one) has no URL and gets the download note.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from bot.files import RemoteFile

SLACK_HOSTS = ("slack.com", ".slack.com", ".slack-edge.com")


def _trusted(url: str, api_url: str) -> bool:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    if host and host == (urlsplit(api_url).hostname or "").lower():
        return True
    return parts.scheme == "https" and any(host == h.lstrip(".") or host.endswith(h) for h in SLACK_HOSTS)


def remote_files(files: Any, *, token: str | None, api_url: str) -> list[RemoteFile]:
    """What bot/files.py needs to fetch each file of a message event."""
    found: list[RemoteFile] = []
    for item in files if isinstance(files, list) else []:
        if not isinstance(item, dict):
            continue
        name = str(item.get("name") or item.get("title") or "file")
        size = item.get("size") if isinstance(item.get("size"), int) else None
        url = item.get("url_private_download") or item.get("url_private")
        if item.get("mode") in ("tombstone", "hidden_by_limit") or not isinstance(url, str):
            url = None
        headers = {"Authorization": f"Bearer {token}"} if url and token and _trusted(url, api_url) else {}
        if url and not headers:
            url = None  # Slack's files need the token; a URL that may not have it is not fetched
        found.append(RemoteFile(name=name, mimetype=str(item.get("mimetype") or item.get("filetype") or ""),
                                size=size, url=url, headers=headers))
    return found
