"""HTTP for sources: one `httpx.AsyncClient` per source, with the back-off every service asks
for. 429 and 503 honour `Retry-After` (seconds or an HTTP date); other 5xx and connection
errors back off exponentially; 401/403/404 become one clear `SourceError` line. Sources that
use a service's own client library keep its retry policy instead and say so in their docs."""

from __future__ import annotations

import asyncio
import email.utils
import logging
import random
import time
from typing import TYPE_CHECKING, Any, Awaitable, Callable


from agent.sources.base import SourceError

if TYPE_CHECKING:
    import httpx  # the client is imported when a source first connects: `askdesk ask` loads the plug-ins

log = logging.getLogger("askdesk.sources")

RETRY_STATUSES = {429, 500, 502, 503, 504}


def retry_after(response: httpx.Response, default: float) -> float:
    """Seconds to wait, from `Retry-After` (delta-seconds or an HTTP date), else `default`."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value) if value else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else default


class SourceHTTP:
    """A client for one source. `sleep` is injectable so tests run the back-off on their clock."""

    def __init__(self, source: str, *, base_url: str = "", headers: dict[str, str] | None = None,
                 auth: Any = None, timeout: float = 30.0, attempts: int = 5, backoff: float = 1.0,
                 max_wait: float = 60.0, sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        import httpx

        self.source = source
        self.attempts, self.backoff, self.max_wait, self._sleep = attempts, backoff, max_wait, sleep
        self.client = httpx.AsyncClient(base_url=base_url, headers=headers or {}, auth=auth, timeout=timeout,
                                        follow_redirects=True, transport=transport)
        self.waited = 0.0  # seconds spent backing off (reported by tests and benches)

    async def request(self, method: str, url: str, *, ok: tuple[int, ...] = (), **kwargs: Any) -> httpx.Response:
        """The response of a successful request (2xx, 304, or a status in `ok`), retrying
        throttling and server faults; `SourceError` with one line otherwise."""
        import httpx

        for attempt in range(1, self.attempts + 1):
            try:
                response = await self.client.request(method, url, **kwargs)
            except httpx.TransportError as exc:
                if attempt == self.attempts:
                    raise SourceError(f"source {self.source!r}: cannot reach {_origin(url, self.client)} "
                                      f"({type(exc).__name__})") from exc
                await self._wait(self._exponential(attempt), f"{type(exc).__name__}", attempt)
                continue
            status = response.status_code
            if status < 300 or status == 304 or status in ok:
                return response
            if status in RETRY_STATUSES and attempt < self.attempts:
                wait = retry_after(response, self._exponential(attempt)) if status in (429, 503) \
                    else self._exponential(attempt)
                await self._wait(wait, f"HTTP {status}", attempt)
                continue
            raise SourceError(self._describe(response))
        raise AssertionError("unreachable")

    async def get_json(self, url: str, **kwargs: Any) -> Any:
        return (await self.request("GET", url, **kwargs)).json()

    async def close(self) -> None:
        await self.client.aclose()

    def _exponential(self, attempt: int) -> float:
        return self.backoff * 2 ** (attempt - 1) * (1 + random.random() / 4)

    async def _wait(self, seconds: float, why: str, attempt: int) -> None:
        seconds = min(seconds, self.max_wait)
        log.warning("source %s: %s, retrying in %.1f s (attempt %d of %d)", self.source, why, seconds, attempt,
                    self.attempts)
        self.waited += seconds
        await self._sleep(seconds)

    def _describe(self, response: httpx.Response) -> str:
        status = response.status_code
        where = f"{response.request.method} {response.request.url.copy_with(query=None)}"
        hint = {401: "the credentials were rejected: check the token variable",
                403: "access denied: the credentials lack permission",
                404: "not found: check the URL, space, site or folder"}.get(status, "")
        detail = _short_body(response)
        return f"source {self.source!r}: {where} answered {status}" + (f" ({hint})" if hint else "") + \
            (f": {detail}" if detail else "")


def _origin(url: str, client: httpx.AsyncClient) -> str:
    import httpx

    full = client.base_url.join(url) if client.base_url else httpx.URL(url)
    return f"{full.scheme}://{full.netloc.decode()}"


def _short_body(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
    for key in ("message", "error_description", "error"):
        value = body.get(key) if isinstance(body, dict) else None
        if isinstance(value, dict):
            value = value.get("message") or value.get("code")
        if isinstance(value, str) and value:
            return value[:200]
    return ""
