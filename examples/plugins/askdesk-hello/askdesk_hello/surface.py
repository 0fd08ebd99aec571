"""A surface: a plain HTTP JSON chat, `POST /chat {"text", "user"}` -> `{"answer", "references"}`.

It hands each question to the shared turn runner (bot/turn.py) like Slack and Teams do, so the
rate limit, the answer records and the "must not raise" fallback are the same; `JsonReply` is
its `Reply`: nothing streams, the whole answer is the response. aiohttp is imported when the
surface starts, not when the plug-in is registered.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError

from askdesk_hello.settings import HelloSettings
from bot.surface import Desk, Stop, Surface
from bot.turn import Incoming

if TYPE_CHECKING:
    from bot.turn import Delivery


class ChatRequest(BaseModel):
    text: str = Field(max_length=20_000)
    user: str = Field("anonymous", min_length=1, max_length=200)
    thread: str | None = Field(None, max_length=200)  # a conversation to continue (default: the user's)


class ChatResponse(BaseModel):
    answer: str
    references: list[dict[str, Any]] = Field(default_factory=list)


class JsonReply:
    """The turn runner's `Reply` for one HTTP request: keeps the answer (or the note) it is given."""

    streams = False

    def __init__(self) -> None:
        self.response: ChatResponse | None = None

    async def progress(self, step: str) -> None:
        """No progress lines: the response is the whole answer."""

    async def text(self, delta: str) -> None:
        """Not streamed."""

    async def finish(self, delivery: "Delivery") -> str | None:
        result = delivery.result
        answer = f"{result.answer}\n\n{delivery.notice}" if delivery.notice else result.answer
        self.response = ChatResponse(answer=answer, references=[r.model_dump(exclude_none=True) for r in result.references])
        return None

    async def note(self, text: str) -> None:
        self.response = ChatResponse(answer=text)

    async def apologise(self, text: str) -> None:
        self.response = ChatResponse(answer=text)


class HelloSurface(Surface):
    name = "hello"
    settings = HelloSettings

    async def start(self, desk: Desk) -> Stop:
        from aiohttp import web

        async def chat(request: web.Request) -> web.Response:
            try:
                asked = ChatRequest.model_validate(await request.json())
            except (ValueError, ValidationError) as exc:
                return web.json_response({"error": f"expected {{\"text\", \"user\"}}: {type(exc).__name__}"},
                                         status=400)
            reply = JsonReply()
            await desk.runner.run(Incoming(surface=self.name, text=asked.text, user_id=asked.user,
                                           thread_id=asked.thread or f"{self.name}:{asked.user}"), reply)
            response = reply.response or ChatResponse(answer="")
            return web.json_response(response.model_dump())

        app = web.Application()
        app.router.add_post("/chat", chat)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        site = web.TCPSite(runner, desk.host, self.config().port)
        await site.start()
        self.app, self.port = app, runner.addresses[0][1]
        desk.say(f"hello chat listening on http://{desk.host}:{self.port}/chat")
        return runner.cleanup
