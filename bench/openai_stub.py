"""A stand-in OpenAI chat-completions endpoint for benchmarks: real SDK, no network.

`OpenAIStub(reply, latency=0.3)` serves POST /v1/chat/completions on 127.0.0.1 from its
own thread (so it takes no time from the event loop being measured), sleeps `latency` per
call like a model would, and answers the structured call instructor makes with
`reply(response_model_name, messages)` as the tool call's arguments. The full recording
fake that tests use (every provider's protocol, scripted errors) is tests/fakes/llm_server.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from aiohttp import web

ReplyFn = Callable[[str, list[dict[str, Any]]], dict[str, Any]]


class OpenAIStub:
    def __init__(self, reply: ReplyFn, *, latency: float = 0.0) -> None:
        self.reply = reply
        self.latency = latency
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def env(self) -> dict[str, str]:
        """Environment pointing the openai SDK (and askdesk's openai provider) here."""
        return {"OPENAI_API_KEY": "bench-key", "OPENAI_BASE_URL": f"http://127.0.0.1:{self.port}/v1"}

    async def _completions(self, request: web.Request) -> web.Response:
        body = await request.json()
        await asyncio.sleep(self.latency)
        choice = body.get("tool_choice")
        name = choice["function"]["name"] if isinstance(choice, dict) else body["tools"][0]["function"]["name"]
        arguments = json.dumps(self.reply(name, body.get("messages") or []))
        message = {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}]}
        prompt = sum(len(str(m.get("content") or "")) for m in body.get("messages") or []) // 4
        return web.json_response({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "stub"),
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls", "logprobs": None}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": len(arguments) // 4,
                      "total_tokens": prompt + len(arguments) // 4},
        })

    def __enter__(self) -> OpenAIStub:
        ready = threading.Event()

        async def start() -> web.AppRunner:
            app = web.Application()
            app.router.add_post("/v1/chat/completions", self._completions)
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            self.port = runner.addresses[0][1]
            return runner

        def run() -> None:
            loop = self._loop = asyncio.new_event_loop()
            runner = loop.run_until_complete(start())
            ready.set()
            loop.run_forever()
            loop.run_until_complete(runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="openai-stub", daemon=True)
        self._thread.start()
        ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
