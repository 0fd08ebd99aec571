"""Fetching the files attached to a question, for Slack and Teams alike.

A file is judged before a byte of it is fetched: the service says whether askdesk can read its
type and whether its declared size is within ASKDESK_FILE_MAX_MB (`Askdesk.file_problem`), so
an image or a 50 MB upload costs no download. A download stops as soon as a declared
Content-Length or the bytes received pass the limit, so a missing or false size cannot make
askdesk read more. Whatever goes wrong becomes the file's `problem` (the service words the
one-line note), never an exception: the question is still answered. URLs are never logged
(Teams download links carry a token).

A file's `headers` (Slack's bot token) go only to the origins the surface names for them
(`header_origins`: scheme, host and port, exactly): a URL elsewhere is not fetched at all, and
redirects are followed here, hop by hop, so the headers never follow one to another origin.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import aiohttp
from yarl import URL

from agent.answers import Attachment, FileProblem

if TYPE_CHECKING:
    from agent.turn.service import Askdesk

log = logging.getLogger("askdesk.files")

DOWNLOAD_TIMEOUT_S = 20.0
CHUNK = 256 * 1024
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)

Origin = tuple[str, str, int]  # scheme, host, port


def origin(url: str | URL) -> Origin | None:
    """The URL's origin as aiohttp will connect to it (parsed by yarl, as aiohttp parses it),
    the scheme's default port filled in; None for anything but plain http(s) to a host,
    credentials in the URL included."""
    try:
        parsed = url if isinstance(url, URL) else URL(url)
    except (TypeError, ValueError):
        return None
    if parsed.scheme not in ("http", "https") or not parsed.host or parsed.user or parsed.password:
        return None
    return parsed.scheme, parsed.host.lower(), parsed.port or (443 if parsed.scheme == "https" else 80)


@dataclass
class RemoteFile:
    """A file as a platform announces it: where to fetch it (and with which headers), or why not."""

    name: str
    mimetype: str = ""
    size: int | None = None  # declared by the platform, when it says
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    header_origins: tuple[Origin, ...] = ()  # the only origins `headers` may be sent to
    problem: FileProblem | None = None  # known before asking the service (a Teams channel file)


class DownloadRefused(Exception):
    def __init__(self, problem: FileProblem, why: str) -> None:
        super().__init__(why)
        self.problem = problem


async def download(session: aiohttp.ClientSession, url: str, headers: dict[str, str], max_bytes: int,
                   mimetype: str = "", header_origins: tuple[Origin, ...] = ()) -> bytes:
    """The file's bytes; DownloadRefused past `max_bytes`, on an HTTP error, or for an HTML page
    where a file was expected (Slack's sign-in page for a token without files:read). `headers`
    are sent only to `header_origins`; a redirect elsewhere is followed without them."""
    target = URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        sent = headers if origin(target) in header_origins else {}
        async with session.get(target, headers=sent, allow_redirects=False) as response:
            location = response.headers.get("Location")
            if response.status in REDIRECTS and location:
                target = response.url.join(URL(location))
                continue
            return await _body(response, max_bytes, mimetype)
    raise DownloadRefused("download_failed", "too many redirects")


async def _body(response: aiohttp.ClientResponse, max_bytes: int, mimetype: str) -> bytes:
    if response.status != 200:
        raise DownloadRefused("download_failed", f"HTTP {response.status}")
    if response.content_length is not None and response.content_length > max_bytes:
        raise DownloadRefused("too_large", f"Content-Length {response.content_length}")
    if response.content_type == "text/html" and "html" not in mimetype.lower():
        raise DownloadRefused("download_failed", "an HTML page instead of the file")
    data = bytearray()
    async for chunk in response.content.iter_chunked(CHUNK):
        data += chunk
        if len(data) > max_bytes:
            raise DownloadRefused("too_large", f"over {max_bytes} bytes")
    return bytes(data)


async def fetch_files(files: list[RemoteFile], askdesk: "Askdesk", surface: str) -> list[Attachment]:
    """Each file's bytes, or why there are none; never raises."""
    max_bytes = askdesk.settings.file_max_bytes
    timeout = aiohttp.ClientTimeout(total=DOWNLOAD_TIMEOUT_S)

    async def one(session: aiohttp.ClientSession, remote: RemoteFile) -> Attachment:
        found = Attachment(name=remote.name, mimetype=remote.mimetype, size=remote.size)
        found.problem = remote.problem or askdesk.file_problem(remote.name, remote.mimetype, remote.size)
        if found.problem is not None:
            return found
        if not remote.url or (remote.headers and origin(remote.url) not in remote.header_origins):
            found.problem = "download_failed"  # no URL, or one its headers may not go to: no request
            return found
        try:
            found.data = await download(session, remote.url, remote.headers, max_bytes, remote.mimetype,
                                        remote.header_origins)
        except DownloadRefused as exc:
            log.warning("%s: an attached file was not downloaded: %s", surface, exc)
            found.problem = exc.problem
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as exc:
            log.warning("%s: an attached file could not be downloaded (%s)", surface, type(exc).__name__)
            found.problem = "download_failed"
        return found

    if not files:
        return []
    async with aiohttp.ClientSession(timeout=timeout) as session:
        return list(await asyncio.gather(*(one(session, f) for f in files)))
