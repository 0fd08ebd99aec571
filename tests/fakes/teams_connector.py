"""A recording fake of the Bot Connector REST API (the `serviceUrl` Teams gives each activity),
plus builders for the Bot Framework activity JSON that Teams posts to a bot.

The real Teams SDK sends to it over HTTP on 127.0.0.1: `POST /v3/conversations/{id}/activities`
(messages, typing, streaming chunks), `POST .../activities/{replyToId}` (classic replies),
`PUT .../activities/{id}` (updates, e.g. a stream's final message) and `DELETE`. Every call
is recorded (method, conversation, body, time) and the visible state is kept like Teams
does: one message per activity id, a streamed message replaced by its final version. A call
can be scripted to fail (e.g. 403 "streaming not allowed" for typing chunks in a channel).
Activity ids are unique within a conversation only (as Teams promises): `ids_per_conversation`
numbers each conversation's messages from 1, so two conversations' answers share an id.
A targeted message (`?isTargetedActivity=true`) is kept as visible to its recipient only;
`POST /v3/conversations` creates a conversation (a personal chat with a user, or with `isGroup`
and `channelData.channel` a new reply chain in that channel, `19:…;messageid=ROOT`); `add_file`
hosts a file at a pre-authorised download URL, as Teams' `file.download.info` gives one.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable
from urllib.parse import unquote

from aiohttp import web

BOT_ID = "28:askdesk-bot"
BOT_NAME = "askdesk"
TENANT_ID = "tenant-0001"
TEAM_ID = "19:team-0001@thread.tacv2"
CHANNEL_ID = "19:channel-0001@thread.tacv2"


@dataclass
class Call:
    method: str  # POST, PUT, DELETE
    conversation: str
    activity_id: str | None  # the path's activity id (reply-to or updated activity)
    body: dict[str, Any]
    at: float = field(default_factory=time.monotonic)
    query: dict[str, str] = field(default_factory=dict)

    @property
    def targeted(self) -> bool:
        """Sent as a targeted message (visible to its recipient only)."""
        return self.query.get("isTargetedActivity") == "true"

    @property
    def type(self) -> str:
        return self.body.get("type", "")

    @property
    def stream_type(self) -> str | None:
        """'informative', 'streaming' or 'final' for streaming activities, else None."""
        for entity in self.body.get("entities") or []:
            if entity.get("type") == "streaminfo":
                return entity.get("streamType")
        return (self.body.get("channelData") or {}).get("streamType")

    @property
    def text(self) -> str:
        return self.body.get("text") or ""


class FakeTeamsConnector:
    def __init__(self, *, ids_per_conversation: bool = False) -> None:
        self.calls: list[Call] = []
        # (conversation, activity id) -> latest visible message
        self.messages: dict[tuple[str, str], dict[str, Any]] = {}
        self.scripted: list[tuple[Callable[[Call], bool], int, dict[str, Any]]] = []
        self.ids_per_conversation = ids_per_conversation
        self._ids = itertools.count(1)
        self._conversation_ids: dict[str, Any] = {}
        self._runner: web.AppRunner | None = None
        self.port = 0
        self._changed: asyncio.Event | None = None
        self.on_record: Callable[[Call], None] | None = None  # benchmarks time deliveries exactly
        self.created: list[dict[str, Any]] = []  # conversations the bot created (personal chats)
        self.files: dict[str, tuple[bytes, str]] = {}
        self._file_ids = itertools.count(1)
        self.emails: dict[str, str] = {}  # user id -> email, as a conversation member carries it

    async def _member(self, request: web.Request) -> web.Response:
        """A conversation member as the Bot Connector describes one (TeamsChannelAccount)."""
        member = request.match_info["member"]
        if member not in self.emails:
            return web.json_response({"error": {"code": "MemberNotFoundInConversation",
                                                "message": "The member could not be found"}}, status=404)
        email = self.emails[member]
        return web.json_response({"id": member, "name": email.split("@")[0], "aadObjectId": f"aad-{member}",
                                  "email": email, "userPrincipalName": email, "userRole": "user"})

    # --- lifecycle -----------------------------------------------------------------------

    async def start(self) -> "FakeTeamsConnector":
        app = web.Application()
        base = "/v3/conversations/{conversation}/activities"
        app.router.add_post("/v3/conversations", self._create_conversation)
        app.router.add_get("/files/{file}/{name}", self._download)
        app.router.add_get("/v3/conversations/{conversation}/members/{member}", self._member)
        app.router.add_post(base, self._create)
        app.router.add_post(base + "/{activity}", self._create)
        app.router.add_put(base + "/{activity}", self._update)
        app.router.add_delete(base + "/{activity}", self._delete)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self._changed = asyncio.Event()
        return self

    async def stop(self) -> None:
        if self._runner:
            await self._runner.cleanup()

    @property
    def service_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"

    def reset(self) -> None:
        self.calls.clear()
        self.messages.clear()
        self.scripted.clear()

    # --- scripting and inspection --------------------------------------------------------

    def script(self, when: Callable[[Call], bool], status: int, error: str = "", *, times: int = 1) -> None:
        """Answer the next `times` calls matching `when` with `status` and a Bot Framework error body."""
        body = {"error": {"code": "BadArgument" if status == 400 else "Forbidden", "message": error}}
        for _ in range(times):
            self.scripted.append((when, status, body))

    def add_file(self, name: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Host a file; returns its download URL (pre-authorised, like `content.downloadUrl`)."""
        file_id = f"file{next(self._file_ids)}"
        self.files[file_id] = (data, content_type)
        return f"http://127.0.0.1:{self.port}/files/{file_id}/{name}?tempauth=fake-{file_id}"

    def visible_to_everyone(self, conversation: str) -> list[dict[str, Any]]:
        """Bot messages in `conversation` that every member sees (not targeted)."""
        return [m for m in self.sent_messages(conversation) if not m.get("_targeted_to")]

    def calls_in(self, conversation: str) -> list[Call]:
        return [c for c in self.calls if c.conversation == conversation]

    def sent_messages(self, conversation: str | None = None) -> list[dict[str, Any]]:
        """Visible bot messages (latest version of each), oldest first."""
        return [m for m in self.messages.values() if conversation is None or m["conversation"]["id"] == conversation]

    async def wait_for(self, predicate: Callable[["FakeTeamsConnector"], bool], timeout: float = 20.0) -> None:
        """Wait until `predicate(self)` holds (the bot answers after the HTTP response)."""
        assert self._changed is not None
        deadline = asyncio.get_running_loop().time() + timeout
        while not predicate(self):
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                raise AssertionError(f"timed out waiting for the bot; calls so far: {[(c.method, c.type, c.stream_type, c.text[:60]) for c in self.calls]}")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), timeout=min(remaining, 0.5))
            except asyncio.TimeoutError:
                pass

    # --- handlers ---------------------------------------------------------------------------

    def _record(self, call: Call) -> web.Response | None:
        self.calls.append(call)
        if self.on_record is not None:
            self.on_record(call)
        if self._changed is not None:
            self._changed.set()
        for i, (when, status, body) in enumerate(self.scripted):
            if when(call):
                del self.scripted[i]
                return web.json_response(body, status=status)
        return None

    async def _create(self, request: web.Request) -> web.Response:
        conversation = unquote(request.match_info["conversation"])
        reply_to = request.match_info.get("activity")
        body = await request.json()
        call = Call("POST", conversation, reply_to, body, query=dict(request.query))
        scripted = self._record(call)
        if scripted is not None:
            return scripted
        stream_id = None
        for entity in body.get("entities") or []:
            if entity.get("type") == "streaminfo":
                stream_id = entity.get("streamId")
        activity_id = body.get("id") or stream_id or f"bot-{next(self._next_ids(conversation))}"
        if body.get("type") == "message":
            self._show(activity_id, conversation, body)
            if call.targeted:
                self.messages[(conversation, activity_id)]["_targeted_to"] = (body.get("recipient") or {}).get("id")
        return web.json_response({"id": activity_id}, status=201)

    async def _create_conversation(self, request: web.Request) -> web.Response:
        body = await request.json()
        channel = ((body.get("channelData") or {}).get("channel") or {}).get("id") if body.get("isGroup") else None
        root = f"bot-{next(self._next_ids(channel))}" if channel else None
        conversation = f"{channel};messageid={root}" if channel else f"a:created-{len(self.created) + 1}"
        scripted = self._record(Call("CREATE", conversation, None, body))
        if scripted is not None:
            return scripted
        self.created.append({"id": conversation, **body})
        if root and (body.get("activity") or {}).get("type") == "message":  # a new reply chain's first message
            self._show(root, conversation, body["activity"])
        return web.json_response({"id": conversation, **({"activityId": root} if root else {})}, status=201)

    async def _download(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file"]
        self._record(Call("GET", "", file_id, {}, query=dict(request.query)))
        if file_id not in self.files or request.query.get("tempauth") != f"fake-{file_id}":
            return web.Response(status=401, text="unauthorized")
        data, content_type = self.files[file_id]
        return web.Response(body=data, content_type=content_type)

    async def _update(self, request: web.Request) -> web.Response:
        conversation = unquote(request.match_info["conversation"])
        activity_id = request.match_info["activity"]
        body = await request.json()
        scripted = self._record(Call("PUT", conversation, activity_id, body))
        if scripted is not None:
            return scripted
        if body.get("type") == "message":
            self._show(activity_id, conversation, body)
        return web.json_response({"id": activity_id})

    async def _delete(self, request: web.Request) -> web.Response:
        conversation = unquote(request.match_info["conversation"])
        activity_id = request.match_info["activity"]
        scripted = self._record(Call("DELETE", conversation, activity_id, {}))
        if scripted is not None:
            return scripted
        self.messages.pop((conversation, activity_id), None)
        return web.Response(status=200)

    def _next_ids(self, conversation: str) -> Any:
        if not self.ids_per_conversation:
            return self._ids
        return self._conversation_ids.setdefault(conversation, itertools.count(1))

    def _show(self, activity_id: str, conversation: str, body: dict[str, Any]) -> None:
        shown = dict(body)
        shown["id"] = activity_id
        shown.setdefault("conversation", {"id": conversation})
        self.messages[(conversation, activity_id)] = shown


# --- activity builders -----------------------------------------------------------------------

_activity_ids = itertools.count(1_700_000_000_000)


def next_activity_id() -> str:
    return str(next(_activity_ids))


def _base(service_url: str, conversation: dict[str, Any], *, user: str, user_name: str, activity_id: str | None,
          channel_data: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "id": activity_id or next_activity_id(),
        "timestamp": "2026-11-22T16:00:00.000Z",
        "serviceUrl": service_url,
        "channelId": "msteams",
        "from": {"id": user, "name": user_name, "aadObjectId": f"aad-{user}"},
        "conversation": conversation,
        "recipient": {"id": BOT_ID, "name": BOT_NAME},
        "locale": "en-US",
        "channelData": {"tenant": {"id": TENANT_ID}, **(channel_data or {})},
    }


def personal_conversation(user: str = "29:user-ada") -> dict[str, Any]:
    return {"id": f"a:personal-{user}", "conversationType": "personal", "tenantId": TENANT_ID}


def channel_conversation(root_id: str) -> dict[str, Any]:
    """A channel reply chain: its id carries the root message id, as Teams sends it."""
    return {"id": f"{CHANNEL_ID};messageid={root_id}", "conversationType": "channel", "isGroup": True,
            "tenantId": TENANT_ID}


def group_conversation(chat: str = "19:group-0001@thread.v2") -> dict[str, Any]:
    return {"id": chat, "conversationType": "groupChat", "isGroup": True, "tenantId": TENANT_ID}


def mention_entity() -> dict[str, Any]:
    return {"type": "mention", "text": f"<at>{BOT_NAME}</at>", "mentioned": {"id": BOT_ID, "name": BOT_NAME}}


def message_activity(service_url: str, text: str, *, conversation: dict[str, Any] | None = None,
                     user: str = "29:user-ada", user_name: str = "Ada", mention: bool = False,
                     activity_id: str | None = None, from_bot: bool = False, **extra: Any) -> dict[str, Any]:
    """A user's message; `mention=True` prefixes `<at>askdesk</at>` with its mention entity."""
    conversation = conversation or personal_conversation(user)
    channel_data: dict[str, Any] = {}
    if conversation.get("conversationType") == "channel":
        channel_data = {"teamsChannelId": CHANNEL_ID, "teamsTeamId": TEAM_ID,
                        "channel": {"id": CHANNEL_ID}, "team": {"id": TEAM_ID}}
    activity = _base(service_url, conversation, user=user, user_name=user_name, activity_id=activity_id,
                     channel_data=channel_data)
    activity.update({"type": "message", "textFormat": "plain",
                     "text": f"<at>{BOT_NAME}</at> {text}" if mention else text})
    if mention:
        activity["entities"] = [mention_entity()]
    if from_bot:
        activity["from"] = {"id": "28:another-bot", "name": "Other bot", "role": "bot"}
    activity.update(extra)
    return activity


def card_submit(service_url: str, data: dict[str, Any], *, conversation: dict[str, Any] | None = None,
                user: str = "29:user-ada", user_name: str = "Ada", reply_to_id: str | None = None) -> dict[str, Any]:
    """An Adaptive Card `Action.Submit` press: a message activity with the button's data as `value`, no text."""
    activity = message_activity(service_url, "", conversation=conversation, user=user, user_name=user_name)
    del activity["text"]
    activity["value"] = data
    if reply_to_id:
        activity["replyToId"] = reply_to_id
    return activity


def invoke_activity(service_url: str, name: str, value: dict[str, Any], *, conversation: dict[str, Any] | None = None,
                    user: str = "29:user-ada", reply_to_id: str | None = None) -> dict[str, Any]:
    activity = _base(service_url, conversation or personal_conversation(user), user=user, user_name="Ada",
                     activity_id=None)
    activity.update({"type": "invoke", "name": name, "value": value})
    if reply_to_id:
        activity["replyToId"] = reply_to_id
    return activity


def extension_query(service_url: str, query: str, *, command_id: str = "searchFacilities",
                    initial_run: bool = False) -> dict[str, Any]:
    """composeExtension/query, as the compose box's app search sends it."""
    parameters = [{"name": "initialRun", "value": "true"}] if initial_run else [{"name": "query", "value": query}]
    return invoke_activity(service_url, "composeExtension/query", {
        "commandId": command_id, "parameters": parameters, "queryOptions": {"skip": 0, "count": 25}})


def feedback_invoke(service_url: str, *, reaction: str, reply_to_id: str, conversation: dict[str, Any] | None = None,
                    comment: str = "", user: str = "29:user-ada") -> dict[str, Any]:
    """message/submitAction from the feedback loop's thumbs up/down."""
    value = {"actionName": "feedback",
             "actionValue": {"reaction": reaction, "feedback": json.dumps({"feedbackText": comment})}}
    return invoke_activity(service_url, "message/submitAction", value, conversation=conversation, user=user,
                           reply_to_id=reply_to_id)


def installation_update(service_url: str, *, conversation: dict[str, Any] | None = None,
                        user: str = "29:user-ada") -> dict[str, Any]:
    activity = _base(service_url, conversation or personal_conversation(user), user=user, user_name="Ada",
                     activity_id=None)
    activity.update({"type": "installationUpdate", "action": "add"})
    return activity


# --- the bot under test ---------------------------------------------------------------------


class TeamsHarness:
    """The real Teams bot (SDK App, dev mode unless `auth` says otherwise) on an ephemeral port,
    posting activity JSON to its /api/messages like Teams does."""

    def __init__(self, connector: FakeTeamsConnector, bot: Any, listener: Any) -> None:
        self.connector = connector
        self.bot = bot
        self.listener = listener
        self.url = f"http://127.0.0.1:{listener.port}/api/messages"
        self.http: Any = None

    @classmethod
    async def start(cls, connector: FakeTeamsConnector, settings: Any, askdesk: Any, runtime: Any = None,
                    auth: Any = None, runner: Any = None) -> "TeamsHarness":
        import aiohttp

        from bot.teams.build import build_teams_bot
        from bot.teams.credentials import TeamsAuth
        from bot.teams.server import TeamsListener, bind

        listener = TeamsListener(bind("127.0.0.1", 0))
        auth = auth or TeamsAuth(None, None, None, dev_mode=True)
        bot = build_teams_bot(settings, askdesk, auth=auth, adapter=listener.adapter(), runner=runner)
        await bot.app.initialize()
        await listener.start()
        harness = cls(connector, bot, listener)
        harness.http = aiohttp.ClientSession()
        return harness

    async def close(self) -> None:
        await self.bot.close()
        if self.http:
            await self.http.close()
        await self.listener.stop()

    async def post(self, activity: dict[str, Any], headers: dict[str, str] | None = None) -> tuple[int, Any]:
        async with self.http.post(self.url, json=activity, headers=headers or {}) as response:
            body = await response.read()
            return response.status, json.loads(body) if body else None

    async def say(self, text: str, **kw: Any) -> dict[str, Any]:
        """Post a user message (see message_activity) and return the activity sent."""
        activity = message_activity(self.connector.service_url, text, **kw)
        status, _ = await self.post(activity)
        assert status == 200, status
        return activity
