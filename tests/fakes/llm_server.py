"""A recording fake LLM server speaking the real OpenAI, Groq, Gemini and Anthropic wire formats.

The real SDK clients (openai, groq, google-genai, anthropic) are pointed at it by base URL
(`srv.env()`), so tests exercise the same HTTP, JSON and instructor parsing paths as
production. Replies are scripted per provider queue; every request is recorded.

    with FakeLLMServer() as srv:              # or: async with FakeLLMServer() as srv:
        srv.script("openai", {"answer": "42", "references": []})
        srv.script_error("openai", status=429, headers={"retry-after": "0"})
        ...
        srv.assert_complete()

Routes and the queue each one pops from:
    POST /v1/chat/completions                      -> "openai"  (OPENAI_BASE_URL=<url>/v1)
    POST /openai/v1/chat/completions               -> "groq"    (GROQ_BASE_URL=<url>; the SDK appends /openai/v1)
    POST /{name}/v1/chat/completions               -> name      (OpenAI-compatible servers: "compatible", "ollama", ...)
    POST /v1beta/models/{model}:generateContent    -> "gemini"  (GOOGLE_GEMINI_BASE_URL=<url>; /v1/models too)
    POST /v1beta/models/{model}:streamGenerateContent?alt=sse -> "gemini" (server-sent events)
    POST /v1/messages                              -> "anthropic" (ANTHROPIC_BASE_URL=<url>; anthropic_api.py)

A request that asks for a stream gets its reply as server-sent events in the provider's
format, paced by `set_stream_pace` or a `Stream` step (tests/fakes/llm_stream.py), unless
`ignore_stream(provider)` makes that provider answer with plain JSON anyway (`ignore_stream(
provider, times=1)`: only the next streamed request).

A `Wire` step answers exactly as its function says (status, JSON body or SSE events): the reply
shapes studied in real provider recordings are built that way in tests/fakes/llm_shapes.py.

The server runs on its own event loop in a background thread, so the same object works
from sync tests, async tests (any loop scope) and benchmarks.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.fakes import anthropic_api
from tests.fakes.llm_stream import (Pace, Stream, WireReply, output_of, send_wire, stream_gemini, stream_openai,
                                    wants_stream)

# --------------------------------------------------------------------------- steps


@dataclass
class Reply:
    """Answer with `obj`, wrapped the way the request asked (tool call / function call / JSON text)."""

    obj: dict[str, Any] | Callable[[RecordedRequest], dict[str, Any]]
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class Raw:
    """Answer with `text` verbatim as the model output (tool-call arguments, or message text)."""

    text: str
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class Error:
    """Answer with an HTTP error in the provider's error format."""

    status: int
    message: str = "scripted error"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Delay:
    """Sleep `seconds` before answering with `then` (None: a 504 nobody should wait for)."""

    seconds: float
    then: Reply | Raw | Error | None = None


@dataclass
class Empty:
    """HTTP 200 with no answer in it: `choices: []` (OpenAI-style) or `candidates: []` (Gemini)."""


@dataclass
class Wire:
    """Answer with `render(request)` as written on the wire (recorded shapes: tests/fakes/llm_shapes.py).
    `render` sees whether the request asked for a stream (`wants_stream`) and answers in kind."""

    render: Callable[[RecordedRequest], WireReply]
    name: str = "wire"


Step = Reply | Raw | Error | Delay | Empty | Stream | Wire


def fault(kind: str) -> Step:
    """One named misbehaviour of a model API (issue 12's fault-injection suite):
    429 | retry_after_long | 500 | hang | non_json | schema_invalid | empty_choices | 401."""
    faults: dict[str, Step] = {
        "429": Error(429, "rate limited", {"retry-after": "0"}),
        "retry_after_long": Error(429, "rate limited for an hour", {"retry-after": "3600"}),
        "500": Error(500, "internal error"),
        "hang": Delay(3600.0),
        "non_json": Raw("I am not JSON at all"),
        "schema_invalid": Raw('{"unexpected": "shape"}'),
        "empty_choices": Empty(),
        "401": Error(401, "Incorrect API key provided"),
    }
    if kind not in faults:
        raise ValueError(f"unknown fault {kind!r}: one of {', '.join(faults)}")
    return faults[kind]


@dataclass
class RecordedRequest:
    """One request as the server saw it."""

    provider: str  # queue name: openai | groq | gemini | compatible | ...
    path: str
    body: dict[str, Any]
    headers: dict[str, str]  # lower-cased names
    status: int = 0  # what the fake answered
    error: str | None = None  # set when nothing was scripted (the test should fail)
    chunks: list[tuple[float, str]] = field(default_factory=list)  # streams: (monotonic time, text so far)

    @property
    def model(self) -> str:
        if self.provider == "gemini":
            return self.path.split("/models/", 1)[1].rsplit(":", 1)[0]
        return str(self.body.get("model", ""))

    @property
    def text(self) -> str:
        """Everything the model was sent, as one string (for `in` assertions)."""
        return json.dumps(self.body, ensure_ascii=False)


def _as_step(reply: Any) -> Step:
    if isinstance(reply, (Reply, Raw, Error, Delay, Empty, Stream, Wire)):
        return reply
    if isinstance(reply, str):
        return Raw(reply)
    if isinstance(reply, dict) or callable(reply):
        return Reply(reply)
    raise TypeError(f"cannot script {reply!r}: give a dict, a str, a callable or a step")


# --------------------------------------------------------------------------- server


class FakeLLMServer:
    """Scripted, recording fake of the OpenAI / Groq / Gemini / Anthropic HTTP APIs on 127.0.0.1:<ephemeral>."""

    def __init__(self, *, latency: float | dict[str, float] = 0.0):
        self._lock = threading.Lock()
        self._queues: dict[str, deque[Step]] = defaultdict(deque)
        self._defaults: dict[str, Step] = {}
        self._latency: dict[str, float] = dict(latency) if isinstance(latency, dict) else {}
        self._default_latency = latency if isinstance(latency, (int, float)) else 0.0
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []
        self.port: int = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._counter = 0
        self._pace: dict[str, Pace] = {}
        self._no_stream: dict[str, int | None] = {}  # provider -> streamed requests left to ignore (None: all)

    # ----------------------------------------------------------------- scripting
    def script(self, provider: str, *replies: Any, input_tokens: int | None = None,
               output_tokens: int | None = None) -> FakeLLMServer:
        """Queue structured replies for `provider`: each a dict (the JSON object the
        response_model should parse into), a callable `(RecordedRequest) -> dict`, or a step."""
        with self._lock:
            for reply in replies:
                step = _as_step(reply)
                if isinstance(step, Reply) and (input_tokens is not None or output_tokens is not None):
                    step = Reply(step.obj, input_tokens, output_tokens)
                self._queues[provider].append(step)
        return self

    def script_raw(self, provider: str, text: str) -> FakeLLMServer:
        """Queue a verbatim model output (e.g. "not json") to exercise instructor's re-ask."""
        return self.script(provider, Raw(text))

    def script_error(self, provider: str, status: int = 500, *, message: str = "scripted error",
                     headers: dict[str, str] | None = None, times: int = 1) -> FakeLLMServer:
        """Queue `times` HTTP errors (429, 500, 401, ...) in the provider's error format."""
        return self.script(provider, *[Error(status, message, dict(headers or {})) for _ in range(times)])

    def script_delay(self, provider: str, seconds: float, then: Any = None) -> FakeLLMServer:
        """Queue a reply that arrives after `seconds` (`then`: dict/str/step; None = 504)."""
        return self.script(provider, Delay(seconds, None if then is None else _as_step(then)))

    def script_fault(self, provider: str, kind: str, *, times: int = 1) -> FakeLLMServer:
        """Queue `times` of a named fault (see `fault`): e.g. script_fault("openai", "empty_choices")."""
        return self.script(provider, *[fault(kind) for _ in range(times)])

    def script_default(self, provider: str, reply: Any) -> FakeLLMServer:
        """Reply used whenever `provider`'s queue is empty (benchmarks; never counted as unused)."""
        with self._lock:
            self._defaults[provider] = _as_step(reply)
        return self

    def set_latency(self, provider: str, seconds: float) -> FakeLLMServer:
        """Fixed extra latency for every request to `provider` (benchmarks: 0.3)."""
        with self._lock:
            self._latency[provider] = seconds
        return self

    def set_stream_pace(self, provider: str, *, first_token: float = 0.0, tokens_per_s: float = 0.0,
                        chars_per_chunk: int = 4) -> FakeLLMServer:
        """Pace of every stream `provider` sends (benchmarks: 0.3 s to the first token, 40 tokens/s)."""
        with self._lock:
            self._pace[provider] = Pace(first_token, tokens_per_s, chars_per_chunk)
        return self

    def ignore_stream(self, provider: str, *, times: int | None = None) -> FakeLLMServer:
        """`provider` answers `stream: true` with a plain JSON completion, as some
        OpenAI-compatible servers (older llama.cpp builds, proxies) do; with `times`, only the
        next `times` streamed requests (a proxy that buffered one response, then streams again)."""
        with self._lock:
            self._no_stream[provider] = times
        return self

    def _ignores_stream(self, provider: str) -> bool:
        with self._lock:
            if provider not in self._no_stream:
                return False
            left = self._no_stream[provider]
            if left is not None:
                if left <= 1:
                    del self._no_stream[provider]
                else:
                    self._no_stream[provider] = left - 1
            return True

    def pending(self, provider: str | None = None) -> int:
        with self._lock:
            if provider is not None:
                return len(self._queues[provider])
            return sum(len(q) for q in self._queues.values())

    def requests_for(self, provider: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.provider == provider]

    def assert_complete(self) -> None:
        """Fail when a scripted step was never used or a request found nothing scripted."""
        with self._lock:
            left = {p: [type(s).__name__ for s in q] for p, q in self._queues.items() if q}
            errors = list(self.errors)
        problems = []
        if left:
            problems.append(f"scripted steps never requested: {left}")
        problems.extend(errors)
        if problems:
            raise AssertionError("FakeLLMServer: " + "; ".join(problems))

    # ----------------------------------------------------------------- env
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self) -> dict[str, str]:
        """Provider env vars pointing every SDK at this server (for monkeypatch.setenv)."""
        return {
            "OPENAI_API_KEY": "test-openai-key",
            "OPENAI_BASE_URL": f"{self.url}/v1",
            "GROQ_API_KEY": "test-groq-key",
            "GROQ_BASE_URL": self.url,
            "GEMINI_API_KEY": "test-gemini-key",
            "GOOGLE_GEMINI_BASE_URL": self.url,
            "ASKDESK_COMPATIBLE_BASE_URL": f"{self.url}/compatible/v1",
            "OLLAMA_HOST": f"{self.url}/ollama",
            "ANTHROPIC_API_KEY": "test-anthropic-key",
            "ANTHROPIC_BASE_URL": self.url,
        }

    # ----------------------------------------------------------------- lifecycle
    def start(self) -> FakeLLMServer:
        ready = threading.Event()
        failure: list[BaseException] = []

        def run() -> None:
            loop = asyncio.new_event_loop()
            self._loop = loop
            try:
                loop.run_until_complete(self._start())
            except BaseException as exc:  # pragma: no cover - reported to the caller
                failure.append(exc)
                ready.set()
                return
            ready.set()
            loop.run_forever()
            loop.run_until_complete(self._runner.cleanup())
            loop.close()

        self._thread = threading.Thread(target=run, name="fake-llm-server", daemon=True)
        self._thread.start()
        ready.wait(10)
        if failure:
            raise failure[0]
        return self

    def stop(self) -> None:
        if self._loop is None or self._thread is None:
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop = self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    async def __aenter__(self) -> FakeLLMServer:
        return self.start()

    async def __aexit__(self, *exc: Any) -> None:
        await asyncio.to_thread(self.stop)

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1beta/models/{target:.+}", self._gemini)  # :generateContent and :streamGenerateContent
        app.router.add_post("/v1/models/{target:.+}", self._gemini)
        app.router.add_post("/v1/messages", self._anthropic)
        app.router.add_post("/v1/chat/completions", self._openai_like)
        app.router.add_post("/{prefix:.+}/v1/chat/completions", self._openai_like)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None, shutdown_timeout=0.1)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]

    # ----------------------------------------------------------------- handlers
    async def _record(self, request: web.Request, provider: str) -> RecordedRequest:
        raw = await request.read()
        try:
            body = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        rec = RecordedRequest(provider, request.path, body, {k.lower(): v for k, v in request.headers.items()})
        with self._lock:
            self.requests.append(rec)
        return rec

    def _next_step(self, rec: RecordedRequest) -> Step | None:
        with self._lock:
            queue = self._queues[rec.provider]
            if queue:
                return queue.popleft()
            if rec.provider in self._defaults:
                return self._defaults[rec.provider]
            rec.error = (
                f"no scripted reply left for {rec.provider!r} "
                f"(request #{len(self.requests_for(rec.provider))} to {rec.path})"
            )
            self.errors.append(rec.error)
            return None

    async def _serve(self, request: web.Request, rec: RecordedRequest,
                     render: Callable[[RecordedRequest, Reply | Raw], dict],
                     error_body: Callable[[int, str], dict], empty: dict | None = None,
                     stream: Callable | None = None) -> web.StreamResponse:
        latency = self._latency.get(rec.provider, self._default_latency)
        if latency:
            await asyncio.sleep(latency)
        step = self._next_step(rec)
        if step is None:
            rec.status = 500
            return web.json_response(error_body(500, f"FakeLLMServer: {rec.error}"), status=500)
        if isinstance(step, Delay):
            await asyncio.sleep(step.seconds)
            step = step.then or Error(504, "FakeLLMServer: delayed reply with nothing after it")
        if isinstance(step, Error):
            rec.status = step.status
            return web.json_response(error_body(step.status, step.message), status=step.status,
                                     headers=step.headers)
        if isinstance(step, Empty):
            rec.status = 200
            return web.json_response(empty or {})
        if isinstance(step, Wire):
            return await send_wire(request, rec, step.render(rec))
        fault = step if isinstance(step, Stream) else None
        if isinstance(step, Stream):
            step = output_of(step)
        if stream is not None and wants_stream(rec) and not self._ignores_stream(rec.provider):
            rec.status = 200
            pace = (fault.pace if fault is not None and fault.pace else None) or self._pace.get(rec.provider, Pace())
            return await stream(rec, step, pace, fault)
        try:
            payload = render(rec, step)
        except Exception as exc:  # a malformed request or script: fail loudly
            rec.error = f"cannot answer {rec.path}: {exc!r}"
            with self._lock:
                self.errors.append(rec.error)
            rec.status = 500
            return web.json_response(error_body(500, f"FakeLLMServer: {rec.error}"), status=500)
        rec.status = 200
        return web.json_response(payload)

    async def _unknown(self, request: web.Request) -> web.Response:
        rec = await self._record(request, "unknown")
        rec.error = f"unexpected {request.method} {request.path}"
        rec.status = 404
        with self._lock:
            self.errors.append(rec.error)
        return web.json_response({"error": {"message": f"FakeLLMServer: {rec.error}"}}, status=404)

    # OpenAI / Groq / OpenAI-compatible ---------------------------------------------
    async def _openai_like(self, request: web.Request) -> web.Response:
        prefix = request.match_info.get("prefix")
        provider = "openai" if prefix is None else ("groq" if prefix == "openai" else prefix)
        rec = await self._record(request, provider)

        async def stream(rec: RecordedRequest, step: Reply | Raw, pace: Pace, fault: Stream | None):
            text = _output_text(rec, step)
            self._counter += 1
            return await stream_openai(request, rec, text=text, tool_name=_openai_tool_name(rec.body),
                                       tokens=_tokens(rec, step, text), pace=pace, fault=fault, counter=self._counter)

        return await self._serve(request, rec, self._render_openai, _openai_error, stream=stream, empty={
            "id": "chatcmpl-fake-empty", "object": "chat.completion", "created": int(time.time()),
            "model": rec.body.get("model", "fake"), "choices": [],
            "usage": {"prompt_tokens": 1, "completion_tokens": 0, "total_tokens": 1}})

    def _render_openai(self, rec: RecordedRequest, step: Reply | Raw) -> dict:
        body = rec.body
        text = _output_text(rec, step)
        prompt_tokens, completion_tokens = _tokens(rec, step, text)
        self._counter += 1
        tool_name = _openai_tool_name(body)
        if tool_name is not None:
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{self._counter}", "type": "function",
                "function": {"name": tool_name, "arguments": text},
            }]}
            finish = "tool_calls"
        else:
            message = {"role": "assistant", "content": text}
            finish = "stop"
        return {
            "id": f"chatcmpl-fake-{self._counter}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }

    # Anthropic ------------------------------------------------------------------------
    async def _anthropic(self, request: web.Request) -> web.Response:
        rec = await self._record(request, "anthropic")

        async def stream(rec: RecordedRequest, step: Reply | Raw, pace: Pace, fault: Stream | None):
            text = _output_text(rec, step)
            return await anthropic_api.stream_messages(request, rec, text=text, tokens=_tokens(rec, step, text),
                                                       pace=pace, fault=fault)

        def render(rec: RecordedRequest, step: Reply | Raw) -> dict:
            text = _output_text(rec, step)
            return anthropic_api.message(rec, text, _tokens(rec, step, text))

        return await self._serve(request, rec, render, anthropic_api.error_body, stream=stream,
                                 empty=anthropic_api.message(rec, "", (1, 0), content=[]))

    # Gemini ---------------------------------------------------------------------------
    async def _gemini(self, request: web.Request) -> web.Response:
        rec = await self._record(request, "gemini")
        if not request.match_info["target"].endswith((":generateContent", ":streamGenerateContent")):
            rec.error = f"only :generateContent and :streamGenerateContent are faked, got {request.path}"
            with self._lock:
                self.errors.append(rec.error)
            rec.status = 404
            return web.json_response(_gemini_error(404, rec.error), status=404)
        problem = _gemini_schema_problem(rec.body)
        if problem:  # what the real API answers; recorded so the test fails readably
            rec.error = f"Gemini would reject this request: {problem}"
            with self._lock:
                self.errors.append(rec.error)
            rec.status = 400
            return web.json_response(_gemini_error(400, problem), status=400)

        async def stream(rec: RecordedRequest, step: Reply | Raw, pace: Pace, fault: Stream | None):
            text = _output_text(rec, step)
            return await stream_gemini(request, rec, text=text, function_name=_gemini_function_name(rec.body),
                                       tokens=_tokens(rec, step, text), pace=pace, fault=fault)

        return await self._serve(request, rec, self._render_gemini, _gemini_error, stream=stream, empty={
            "candidates": [], "usageMetadata": {"promptTokenCount": 1, "totalTokenCount": 1}})

    def _render_gemini(self, rec: RecordedRequest, step: Reply | Raw) -> dict:
        text = _output_text(rec, step)
        prompt_tokens, completion_tokens = _tokens(rec, step, text)
        name = _gemini_function_name(rec.body)
        part: dict[str, Any]
        if name is not None:
            try:
                args = json.loads(text)
            except json.JSONDecodeError:
                args = None
            # A real model in function-calling mode ANY always calls the function;
            # non-JSON raw output becomes plain text (instructor then re-asks).
            part = {"functionCall": {"name": name, "args": args}} if isinstance(args, dict) else {"text": text}
        else:
            part = {"text": text}
        return {
            "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": prompt_tokens, "candidatesTokenCount": completion_tokens,
                              "totalTokenCount": prompt_tokens + completion_tokens},
            "modelVersion": rec.model,
        }


# --------------------------------------------------------------------------- wire helpers


def _output_text(rec: RecordedRequest, step: Reply | Raw) -> str:
    if isinstance(step, Raw):
        return step.text
    obj = step.obj(rec) if callable(step.obj) else step.obj
    return json.dumps(obj, ensure_ascii=False)


def _tokens(rec: RecordedRequest, step: Reply | Raw, text: str) -> tuple[int, int]:
    prompt = step.input_tokens if step.input_tokens is not None else max(1, len(rec.text) // 4)
    completion = step.output_tokens if step.output_tokens is not None else max(1, len(text) // 4)
    return prompt, completion


def _openai_tool_name(body: dict) -> str | None:
    choice = body.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name")
    tools = body.get("tools") or []
    if tools:
        return tools[0]["function"]["name"]
    return None


def _gemini_function_name(body: dict) -> str | None:
    config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
    allowed = config.get("allowedFunctionNames") or []
    if allowed:
        return allowed[0]
    for tool in body.get("tools") or []:
        for decl in tool.get("functionDeclarations") or []:
            return decl["name"]
    return None


def _gemini_schema_problem(body: dict) -> str | None:
    """The function-declaration rules of the real API that bite most often."""
    def walk(node: Any, where: str) -> str | None:
        if isinstance(node, list):
            return next((p for i, n in enumerate(node) if (p := walk(n, f"{where}[{i}]"))), None)
        if not isinstance(node, dict):
            return None
        if str(node.get("type", "")).upper() == "OBJECT" and not node.get("properties"):
            return f"* GenerateContentRequest.{where}.properties: should be non-empty for OBJECT type"
        for name in node.get("required") or []:
            if name not in (node.get("properties") or {}):
                return f"* GenerateContentRequest.{where}.required[{name}]: property is not defined"
        for key, value in node.items():
            if key in ("properties",):
                found = next((p for k, v in value.items() if (p := walk(v, f"{where}.properties[{k}]"))), None)
            else:
                found = walk(value, f"{where}.{key}")
            if found:
                return found
        return None

    for t, tool in enumerate(body.get("tools") or []):
        for d, decl in enumerate(tool.get("functionDeclarations") or []):
            if decl.get("parameters") is not None:
                found = walk(decl["parameters"], f"tools[{t}].function_declarations[{d}].parameters")
                if found:
                    return found
    return None


_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


def _openai_error(status: int, message: str) -> dict:
    kind = {401: "invalid_api_key", 429: "rate_limit_exceeded"}.get(status, "server_error" if status >= 500 else "invalid_request_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _gemini_error(status: int, message: str) -> dict:
    return {"error": {"code": status, "message": message, "status": _GEMINI_STATUS.get(status, "UNKNOWN")}}
