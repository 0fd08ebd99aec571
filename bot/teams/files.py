"""The files of a Teams message (`activity.attachments`), as bot/files.py fetches them.

- A file sent in a personal chat arrives as `application/vnd.microsoft.teams.file.download.info`
  (the app manifest's `supportsFiles`): `content.downloadUrl` is a short-lived, pre-authorised
  link, fetched without a token.
- A pasted image is `image/*` with a `contentUrl`: askdesk reads no images, so it is never
  fetched, only noted.
- A file shared in a channel or group chat is a `reference` to SharePoint/OneDrive that a bot
  cannot open: noted with a pointer to the personal chat.
- Any other attachment with a `contentUrl` and a file's type (the Agents Playground, Web Chat)
  is fetched from there. The message's own HTML (`text/html`) and cards are not files.
"""

from __future__ import annotations

from typing import Any

from bot.files import RemoteFile

DOWNLOAD_INFO = "application/vnd.microsoft.teams.file.download.info"
NOT_FILES = ("text/html", "application/vnd.microsoft.card.", "application/vnd.microsoft.teams.card.")


def _field(item: Any, name: str, alias: str) -> Any:
    return item.get(alias) if isinstance(item, dict) else getattr(item, name, None)


def remote_files(attachments: list[Any] | None) -> list[RemoteFile]:
    """What bot/files.py needs for each file of a message (SDK models or activity JSON)."""
    found: list[RemoteFile] = []
    for item in attachments or []:
        kind = str(_field(item, "content_type", "contentType") or "")
        url = _field(item, "content_url", "contentUrl")
        content = _field(item, "content", "content")
        name = str(_field(item, "name", "name") or "")
        if kind.startswith(NOT_FILES):
            continue
        if kind == DOWNLOAD_INFO:
            info = content if isinstance(content, dict) else {}
            found.append(RemoteFile(name=name or "file", mimetype=str(info.get("fileType") or ""),
                                    url=info.get("downloadUrl") if isinstance(info.get("downloadUrl"), str) else None))
        elif kind == "reference":
            found.append(RemoteFile(name=name or "file", problem="not_shared"))
        elif kind.startswith("image/"):
            found.append(RemoteFile(name=name or "image", mimetype=kind, problem="image"))
        elif isinstance(url, str):
            found.append(RemoteFile(name=name or "file", mimetype=kind, url=url))
    return found
