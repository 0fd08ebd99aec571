"""The files of a Slack message (`event["files"]`), as bot/files.py fetches them.

Slack serves a file's bytes at its `url_private_download` to a request carrying the bot token
(scope `files:read`). The token goes to two origins only, compared exactly (scheme, host and
port): the configured Web API's (`ASKDESK_SLACK_API_URL`, https://slack.com by default; a fake
in tests) and Slack's file host, https://files.slack.com. An event's URL is data someone else
wrote: a look-alike host (`files.slack.com.example.net`, `user@host`), another port or plain
http gets no token and is not fetched at all, and a redirect never carries the token elsewhere
(bot/files.py). A file Slack does not let the bot fetch (hidden by the workspace's plan, a
Slack Connect file that needs `files.info`, a deleted one) has no URL and gets the download note.
"""

from __future__ import annotations

from typing import Any

from bot.files import Origin, RemoteFile, origin

FILES_ORIGIN: Origin = ("https", "files.slack.com", 443)


def token_origins(api_url: str) -> tuple[Origin, ...]:
    """Where the bot token may go: the Web API's origin and Slack's file host."""
    api = origin(api_url)
    return (api, FILES_ORIGIN) if api is not None and api != FILES_ORIGIN else (FILES_ORIGIN,)


def remote_files(files: Any, *, token: str | None, api_url: str) -> list[RemoteFile]:
    """What bot/files.py needs to fetch each file of a message event."""
    allowed = token_origins(api_url)
    found: list[RemoteFile] = []
    for item in files if isinstance(files, list) else []:
        if not isinstance(item, dict):
            continue
        name = str(item.get("name") or item.get("title") or "file")
        size = item.get("size") if isinstance(item.get("size"), int) else None
        url = item.get("url_private_download") or item.get("url_private")
        if item.get("mode") in ("tombstone", "hidden_by_limit") or not isinstance(url, str):
            url = None
        trusted = url is not None and bool(token) and origin(url) in allowed
        headers = {"Authorization": f"Bearer {token}"} if trusted else {}
        if not trusted:
            url = None  # Slack's files need the token; a URL that may not have it is not fetched
        found.append(RemoteFile(name=name, mimetype=str(item.get("mimetype") or item.get("filetype") or ""),
                                size=size, url=url, headers=headers, header_origins=allowed))
    return found
