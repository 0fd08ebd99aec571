"""A recording fake of the Slack Web API (and of slash-command response_urls and file downloads).

Real `slack_sdk` clients talk to it over HTTP on 127.0.0.1 (`AsyncWebClient(base_url=
fake.api_url)`). It keeps threads in memory, so messages the bot posts come back from
`conversations.replies` like on Slack, records every call (method, arguments, time) and
can be scripted per method: a 429 with `Retry-After`, or an `{"ok": false}` error.
`add_file` hosts a file as Slack does: a file object for an event's `files`, whose
`url_private_download` serves the bytes to a request with a bot token and, like Slack, a
sign-in page (HTML, 200) to one without (`stall`: only after that many seconds, a download in
progress when a process is killed); `redirect` answers 302 to another URL, as a CDN hop would.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl, urlencode

from aiohttp import web

from tests.fakes.loopback import serve

BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
TEAM_ID = "T0001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    at: float = field(default_factory=time.monotonic)


class FakeSlackAPI:
    def __init__(self, *, bot_user_id: str = BOT_USER_ID, bot_id: str = BOT_ID, team_id: str = TEAM_ID) -> None:
        self.bot_user_id, self.bot_id, self.team_id = bot_user_id, bot_id, team_id
        self.calls: list[Call] = []
        self.threads: dict[tuple[str, str], list[dict[str, Any]]] = {}
        self.scripted: dict[str, list[tuple[int, dict[str, Any], dict[str, str]]]] = {}
        self.streams: dict[tuple[str, str], dict[str, Any]] = {}
        self.emails: dict[str, str] = {}  # user id -> the email users.info returns (users:read.email)
        self.locales: dict[str, str] = {}  # user id -> the locale users.info returns with include_locale
        self._ts = itertools.count(1)
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._changed = asyncio.Event()
        self.on_record: Any = None  # optional callback(Call): benchmarks time deliveries exactly
        self.socket_envelopes: list[dict[str, Any]] = []  # sent to a Socket Mode client once it connects
        self.socket_acks: list[dict[str, Any]] = []
        self.files: dict[str, tuple[bytes, str, bool]] = {}  # file id -> (bytes, content type, chunked)
        self.stalls: dict[str, float] = {}  # file id -> seconds its download waits before answering
        self._stopping = asyncio.Event()  # cuts stalled downloads short at stop()
        self._redirects: dict[str, str] = {}
        self._file_ids = itertools.count(1)

    # --- lifecycle ----------------------------------------------------------------------------

    async def start(self) -> "FakeSlackAPI":
        app = web.Application()
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/response/{hook}", self._response_url)
        app.router.add_get("/socket", self._socket)
        app.router.add_get("/files-pri/{file}/download/{name}", self._download)
        app.router.add_get("/redirect/{hop}", self._redirect)
        self._runner, self.port = await serve(app)
        return self

    async def stop(self) -> None:
        self._stopping.set()
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api/"

    def response_url(self, hook: str = "hook") -> str:
        return f"http://127.0.0.1:{self.port}/response/{hook}"

    def reset(self) -> None:
        self.calls.clear()
        self.threads.clear()
        self.scripted.clear()
        self.streams.clear()

    # --- scripting and inspection --------------------------------------------------------

    def script(self, method: str, *, status: int = 200, body: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None, times: int = 1) -> None:
        """The next `times` calls of `method` get this answer instead of the normal one."""
        for _ in range(times):
            self.scripted.setdefault(method, []).append((status, body or {"ok": False, "error": "ratelimited"}, headers or {}))

    def rate_limit(self, method: str, retry_after: int = 1, times: int = 1) -> None:
        self.script(method, status=429, body={"ok": False, "error": "ratelimited"},
                    headers={"Retry-After": str(retry_after)}, times=times)

    def add_thread(self, channel: str, messages: list[dict[str, Any]]) -> str:
        """Seed a thread (first message is the parent); returns its thread_ts."""
        thread_ts = messages[0]["ts"]
        stored = []
        for m in messages:
            m = dict(m)
            if m["ts"] != thread_ts:
                m.setdefault("thread_ts", thread_ts)
            stored.append(m)
        self.threads[(channel, thread_ts)] = stored
        return thread_ts

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    def methods(self) -> list[str]:
        return [c.method for c in self.calls]

    async def wait_for(self, method: str, count: int = 1, timeout: float = 10.0) -> list[Call]:
        deadline = time.monotonic() + timeout
        while len(self.calls_to(method)) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"expected {count} call(s) to {method}; got {self.methods()}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=0.05)
            except asyncio.TimeoutError:
                pass
        return self.calls_to(method)

    def posted_texts(self) -> list[str]:
        """Everything the bot said: posted, updated and streamed texts, in order."""
        texts = []
        for c in self.calls:
            if c.method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
                texts.append(str(c.args.get("text", "")) + json.dumps(c.args.get("blocks") or []))
            elif c.method.startswith("chat.") and "Stream" in c.method:
                texts.append(json.dumps(c.args.get("chunks") or []) + json.dumps(c.args.get("blocks") or []))
            elif c.method.startswith("response_url"):
                texts.append(json.dumps(c.args))
        return texts

    def add_file(self, name: str, data: bytes, mimetype: str, *, size: int | None = None, chunked: bool = False,
                 content_type: str | None = None, stall: float = 0.0) -> dict[str, Any]:
        """Host a file; returns its file object as events carry it. `size`: what Slack declares
        (default: the real size); `chunked`: served without a Content-Length; `stall`: seconds
        before its download answers."""
        file_id = f"F{next(self._file_ids):04d}"
        self.files[file_id] = (data, content_type or mimetype, chunked)
        if stall:
            self.stalls[file_id] = stall
        return {
            "id": file_id, "created": int(time.time()), "timestamp": int(time.time()), "name": name, "title": name,
            "mimetype": mimetype, "filetype": name.rsplit(".", 1)[-1] if "." in name else "binary",
            "pretty_type": name.rsplit(".", 1)[-1].upper(), "user": "U0001", "user_team": self.team_id,
            "editable": False, "size": len(data) if size is None else size, "mode": "hosted", "is_external": False,
            "external_type": "", "is_public": True, "public_url_shared": False, "display_as_bot": False,
            "username": "",
            "url_private": f"http://127.0.0.1:{self.port}/files-pri/{self.team_id}-{file_id}/{name}",
            "url_private_download": f"http://127.0.0.1:{self.port}/files-pri/{self.team_id}-{file_id}/download/{name}",
            "permalink": f"https://fake.slack.com/files/U0001/{file_id}/{name}",
        }

    def redirect(self, to: str) -> str:
        """A URL on this server that answers `302 Location: to` (recorded as `files:redirect`)."""
        hop = f"h{len(self._redirects) + 1}"
        self._redirects[hop] = to
        return f"http://127.0.0.1:{self.port}/redirect/{hop}"

    # --- handlers -------------------------------------------------------------------------------

    async def _args(self, request: web.Request) -> dict[str, Any]:
        args: dict[str, Any] = dict(request.query)
        if request.can_read_body:
            raw = await request.read()
            if request.content_type == "application/json":
                args.update(json.loads(raw or b"{}"))
            else:
                args.update(dict(parse_qsl(raw.decode())))
        for key in ("blocks", "chunks", "prompts", "loading_messages", "view"):
            if isinstance(args.get(key), str):
                try:
                    args[key] = json.loads(args[key])
                except json.JSONDecodeError:
                    pass
        if "Authorization" in request.headers:
            args["_token"] = request.headers["Authorization"].removeprefix("Bearer ")
        return args

    def _record(self, method: str, args: dict[str, Any]) -> None:
        call = Call(method, args)
        self.calls.append(call)
        self._changed.set()
        if self.on_record is not None:
            self.on_record(call)

    def _next_ts(self) -> str:
        return f"1700000{next(self._ts):03d}.000100"

    def _append(self, channel: str, message: dict[str, Any]) -> None:
        thread_ts = message.get("thread_ts") or message["ts"]
        self.threads.setdefault((channel, thread_ts), []).append(message)

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        args = await self._args(request)
        self._record(method, args)
        if self.scripted.get(method):
            status, body, headers = self.scripted[method].pop(0)
            return web.json_response(body, status=status, headers=headers)
        handler = getattr(self, "_" + method.replace(".", "_"), None)
        body = handler(args) if handler else {"ok": True}
        return web.json_response(body)

    async def _download(self, request: web.Request) -> web.StreamResponse:
        """A file's bytes for a bot token; Slack's sign-in page (HTML) otherwise."""
        file_id = request.match_info["file"].rsplit("-", 1)[-1]
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self._record("files:download", {"file": file_id, "_token": token})
        if file_id in self.stalls:
            try:
                await asyncio.wait_for(self._stopping.wait(), self.stalls[file_id])
            except asyncio.TimeoutError:
                pass
        if file_id not in self.files:
            return web.Response(status=404, text="file not found")
        if not token.startswith("xoxb-"):
            return web.Response(text="<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
                                content_type="text/html")
        data, content_type, chunked = self.files[file_id]
        if not chunked:
            return web.Response(body=data, content_type=content_type)
        response = web.StreamResponse(headers={"Content-Type": content_type})
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for start in range(0, len(data), 1 << 20):
                await response.write(data[start:start + (1 << 20)])
        except (ConnectionResetError, RuntimeError):
            pass  # the bot stopped reading (past its limit)
        return response

    async def _redirect(self, request: web.Request) -> web.Response:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self._record("files:redirect", {"hop": request.match_info["hop"], "_token": token})
        raise web.HTTPFound(self._redirects[request.match_info["hop"]])

    async def _response_url(self, request: web.Request) -> web.Response:
        payload = await request.json()
        self._record(f"response_url:{request.match_info['hook']}", payload)
        return web.Response(text="ok")

    # --- Web API methods ------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        """Socket Mode: say hello, push the queued envelopes, record the client's acks."""
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        await ws.send_json({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A0001"}})
        for envelope in self.socket_envelopes:
            await ws.send_json(envelope)
        async for message in ws:
            if message.type == web.WSMsgType.TEXT:
                self.socket_acks.append(json.loads(message.data))
                self._changed.set()
        return ws

    def _apps_connections_open(self, args: dict) -> dict:
        if not args.get("_token", "").startswith("xapp-") or args["_token"] == "xapp-invalid":
            return {"ok": False, "error": "invalid_auth"}
        return {"ok": True, "url": f"ws://127.0.0.1:{self.port}/socket"}

    def _auth_test(self, args: dict) -> dict:
        token = args.get("_token", "")
        if not token.startswith("xoxb-") or token == "xoxb-invalid":
            return {"ok": False, "error": "invalid_auth"}
        return {"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "askdesk",
                "team_id": self.team_id, "user_id": self.bot_user_id, "bot_id": self.bot_id}

    def _bot_message(self, args: dict, text: str) -> dict:
        ts = self._next_ts()
        message = {"type": "message", "ts": ts, "user": self.bot_user_id, "bot_id": self.bot_id, "text": text,
                   "blocks": args.get("blocks") or []}
        if args.get("thread_ts"):
            message["thread_ts"] = args["thread_ts"]
        self._append(args["channel"], message)
        return message

    def _chat_postMessage(self, args: dict) -> dict:
        message = self._bot_message(args, args.get("text", ""))
        return {"ok": True, "channel": args["channel"], "ts": message["ts"], "message": message}

    def _chat_update(self, args: dict) -> dict:
        for messages in self.threads.values():
            for m in messages:
                if m["ts"] == args.get("ts"):
                    m["text"] = args.get("text", m["text"])
                    if "blocks" in args:
                        m["blocks"] = args["blocks"]
        return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}

    def _chat_postEphemeral(self, args: dict) -> dict:
        return {"ok": True, "message_ts": self._next_ts()}

    def _chunks_text(self, args: dict) -> str:
        text = args.get("markdown_text") or ""
        for chunk in args.get("chunks") or []:
            if chunk.get("type") == "markdown_text":
                text += chunk.get("text", "")
        return text

    def _chat_startStream(self, args: dict) -> dict:
        message = self._bot_message(args, self._chunks_text(args))
        self.streams[(args["channel"], message["ts"])] = message
        return {"ok": True, "channel": args["channel"], "ts": message["ts"]}

    def _chat_appendStream(self, args: dict) -> dict:
        message = self.streams.get((args["channel"], args.get("ts")))
        if message is None:
            return {"ok": False, "error": "message_not_found"}
        message["text"] += self._chunks_text(args)
        return {"ok": True, "channel": args["channel"], "ts": args["ts"]}

    def _chat_stopStream(self, args: dict) -> dict:
        message = self.streams.pop((args["channel"], args.get("ts")), None)
        if message is None:
            return {"ok": False, "error": "message_not_streaming"}
        message["text"] += self._chunks_text(args)
        message["blocks"] = args.get("blocks") or []
        return {"ok": True, "channel": args["channel"], "ts": args["ts"], "message": message}

    def _conversations_replies(self, args: dict) -> dict:
        messages = self.threads.get((args.get("channel"), args.get("ts")))
        if messages is None:
            return {"ok": False, "error": "thread_not_found"}
        return {"ok": True, "messages": [dict(m) for m in messages], "has_more": False}

    def _chat_getPermalink(self, args: dict) -> dict:
        return {"ok": True, "channel": args.get("channel"),
                "permalink": f"https://fake.slack.com/archives/{args.get('channel')}/p{str(args.get('message_ts')).replace('.', '')}"}

    def _users_info(self, args: dict) -> dict:
        """As Slack answers: `user.locale` ("en-US" unless set) only when asked with include_locale."""
        user = args.get("user", "")
        profile = {"real_name": f"Person {user}", **({"email": self.emails[user]} if user in self.emails else {})}
        found = {"id": user, "name": user.lower(), "profile": profile}
        if str(args.get("include_locale", "")).lower() in ("1", "true"):
            found["locale"] = self.locales.get(user, "en-US")
        return {"ok": True, "user": found}

    def _views_open(self, args: dict) -> dict:
        return {"ok": True, "view": {"id": "V0001", **(args.get("view") if isinstance(args.get("view"), dict) else {})}}

    def _assistant_threads_setStatus(self, args: dict) -> dict:
        return {"ok": True}

    def _assistant_threads_setSuggestedPrompts(self, args: dict) -> dict:
        return {"ok": True}

    def _assistant_threads_setTitle(self, args: dict) -> dict:
        return {"ok": True}


# --- the Slack side of the HTTP endpoint: signed requests as Slack sends them ----------------

SIGNING_SECRET = "test-signing-secret"


def signed_headers(body: str, *, secret: str = SIGNING_SECRET, timestamp: int | None = None,
                   content_type: str = "application/json") -> dict[str, str]:
    """Headers Slack would send: X-Slack-Request-Timestamp and a v0 HMAC signature."""
    from slack_sdk.signature import SignatureVerifier

    stamp = str(int(time.time()) if timestamp is None else timestamp)
    signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
    return {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": signature, "Content-Type": content_type}


_event_ids = itertools.count(1)


def event_envelope(event: dict[str, Any], *, event_id: str | None = None, team_id: str = TEAM_ID,
                   bot_user_id: str = BOT_USER_ID) -> dict[str, Any]:
    return {
        "token": "legacy", "team_id": team_id, "api_app_id": "A0001", "type": "event_callback",
        "event_id": event_id or f"Ev{next(_event_ids):06d}", "event_time": int(time.time()), "event": event,
        "authorizations": [{"team_id": team_id, "user_id": bot_user_id, "is_bot": True}],
    }


def message_event(text: str, *, channel: str = "C0001", ts: str, user: str = "U0001", thread_ts: str | None = None,
                  channel_type: str = "channel", type: str = "message", **extra: Any) -> dict[str, Any]:
    event = {"type": type, "channel": channel, "user": user, "text": text, "ts": ts, "team": TEAM_ID,
             "event_ts": ts, **extra}
    if type == "message":
        event["channel_type"] = channel_type
    if thread_ts:
        event["thread_ts"] = thread_ts
    return event


# --- a harness: the real bot served over HTTP, driven as Slack drives it (tests, bench) --------


class SlackHarness:
    def __init__(self, fake: FakeSlackAPI, bot: Any) -> None:
        self.fake = fake
        self.bot = bot
        self.url = ""
        self._runner = None
        self.http: Any = None
        self.last_body = ""

    @classmethod
    async def start(cls, fake: FakeSlackAPI, settings: Any, askdesk: Any, runtime: Any = None,
                    runner: Any = None) -> "SlackHarness":
        import aiohttp

        from bot.slack.app import build_slack_app

        settings = settings.model_copy(update={"slack_api_url": fake.api_url})
        bot = build_slack_app(settings, askdesk, token="xoxb-test", signing_secret=SIGNING_SECRET, runner=runner)
        harness = cls(fake, bot)
        harness._runner, port = await bot.start_http("127.0.0.1", 0)
        harness.url = f"http://127.0.0.1:{port}/slack/events"
        harness.http = aiohttp.ClientSession()
        return harness

    async def close(self) -> None:
        await self.bot.drain()
        if self.http:
            await self.http.close()
        if self._runner:
            await self._runner.cleanup()

    async def post(self, body: str, headers: dict[str, str]) -> int:
        assert self.http is not None
        async with self.http.post(self.url, data=body.encode(), headers=headers) as response:
            self.last_body = await response.text()
            return response.status

    async def send_event(self, event: dict[str, Any], *, event_id: str | None = None, retry_num: int | None = None,
                         secret: str = SIGNING_SECRET, timestamp: int | None = None) -> int:
        body = json.dumps(event_envelope(event, event_id=event_id))
        headers = signed_headers(body, secret=secret, timestamp=timestamp)
        if retry_num is not None:
            headers["X-Slack-Retry-Num"] = str(retry_num)
            headers["X-Slack-Retry-Reason"] = "http_timeout"
        return await self.post(body, headers)

    async def mention(self, text: str, *, ts: str, channel: str = "C0001", user: str = "U0001",
                      thread_ts: str | None = None, **kw: Any) -> int:
        event = message_event(f"<@{BOT_USER_ID}> {text}", channel=channel, ts=ts, user=user, thread_ts=thread_ts,
                              type="app_mention")
        return await self.send_event(event, **kw)

    async def dm(self, text: str, *, ts: str, channel: str = "D0001", user: str = "U0001",
                 thread_ts: str | None = None, **kw: Any) -> int:
        event = message_event(text, channel=channel, ts=ts, user=user, thread_ts=thread_ts, channel_type="im")
        return await self.send_event(event, **kw)

    async def form(self, fields: dict[str, str]) -> int:
        body = urlencode(fields)
        return await self.post(body, signed_headers(body, content_type="application/x-www-form-urlencoded"))

    async def command(self, text: str, *, command: str = "/facility", user: str = "U0001", channel: str = "C0001",
                      hook: str = "cmd") -> int:
        return await self.form({
            "token": "legacy", "team_id": TEAM_ID, "team_domain": "fake", "channel_id": channel,
            "channel_name": "general", "user_id": user, "user_name": "someone", "command": command, "text": text,
            "api_app_id": "A0001", "response_url": self.fake.response_url(hook), "trigger_id": f"trig{time.time()}",
        })

    async def click(self, action_id: str, value: str, *, user: str = "U0001", channel: str = "C0001",
                    message_ts: str = "1700000001.000100", thread_ts: str | None = None, hook: str = "act",
                    message: dict[str, Any] | None = None) -> int:
        """A button press; `message`: the pressed message as Slack sends it along (text, blocks)."""
        payload = {
            "type": "block_actions", "user": {"id": user, "team_id": TEAM_ID}, "team": {"id": TEAM_ID},
            "api_app_id": "A0001", "token": "legacy", "trigger_id": f"trig{time.time()}",
            "channel": {"id": channel}, "response_url": self.fake.response_url(hook),
            "container": {"type": "message", "channel_id": channel, "message_ts": message_ts,
                          **({"thread_ts": thread_ts} if thread_ts else {})},
            "message": {**(message or {}), "ts": message_ts, "type": "message",
                        **({"thread_ts": thread_ts} if thread_ts else {})},
            "actions": [{"type": "button", "action_id": action_id, "block_id": "b", "value": value,
                         "action_ts": str(time.time())}],
        }
        return await self.form({"payload": json.dumps(payload)})

    async def submit_view(self, view: dict[str, Any], values: dict[str, dict[str, dict[str, Any]]], *,
                          user: str = "U0001") -> int:
        """A modal's submission (`view_submission`), as Slack sends it."""
        payload = {
            "type": "view_submission", "team": {"id": TEAM_ID}, "user": {"id": user, "team_id": TEAM_ID},
            "api_app_id": "A0001", "token": "legacy", "trigger_id": f"trig{time.time()}",
            "view": {**view, "id": "V0001", "team_id": TEAM_ID, "state": {"values": values}},
        }
        return await self.form({"payload": json.dumps(payload)})
