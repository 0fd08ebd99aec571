"""The HTTP front of `/slack/events`: Bolt's own aiohttp app, behind one guard.

Bolt's request handling (signature check, acks, dispatch) does the work; the guard only
turns requests Bolt would choke on into a clean 4xx before they reach it: no or
non-numeric `X-Slack-Request-Timestamp`, no signature, a wrong signature (Bolt would log
the whole body at INFO), and signed bodies that are not a Slack payload (bad JSON,
`"event": null`). Each is one log line without the body — never a traceback.
"""

from __future__ import annotations

import logging
from typing import Any, Awaitable, Callable

from aiohttp import web
from slack_bolt.request.internals import parse_body
from slack_sdk.signature import SignatureVerifier

log = logging.getLogger("askdesk.slack")

EVENTS_PATH = "/slack/events"
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _payload_ok(body: str, content_type: str) -> bool:
    try:
        payload: Any = parse_body(body, content_type)
    except ValueError:  # bad JSON, in the body or in a form's `payload`
        return False
    if not isinstance(payload, dict):
        return False
    if payload.get("type") == "event_callback":
        event = payload.get("event")
        return isinstance(event, dict) and isinstance(event.get("type"), str)
    return True


def request_guard(signing_secret: str) -> Any:
    verifier = SignatureVerifier(signing_secret)

    @web.middleware
    async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path != EVENTS_PATH or request.method != "POST":
            return await handler(request)
        body = await request.text()  # aiohttp keeps it: Bolt's adapter reads the same text
        stamp = request.headers.get("X-Slack-Request-Timestamp", "")
        signature = request.headers.get("X-Slack-Signature", "")
        if not (stamp.isdigit() and signature and verifier.is_valid(body, stamp, signature)):
            log.info("slack: rejected a request without a valid signature")
            return web.json_response({"error": "invalid request"}, status=401)
        if not _payload_ok(body, request.content_type):
            log.warning("slack: rejected a signed request whose body is not a Slack payload")
            return web.json_response({"error": "invalid payload"}, status=400)
        return await handler(request)

    return guard


async def healthz(_: web.Request) -> web.Response:
    return web.json_response({"ok": True})
