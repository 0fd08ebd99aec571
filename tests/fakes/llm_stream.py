"""Server-sent-event streaming for the fake LLM server, in each provider's wire format.

A request that asks for a stream (`"stream": true` in chat completions, or Gemini's
`:streamGenerateContent?alt=sse`) gets its scripted reply as SSE chunks instead of one
JSON body, paced like a real model: `first_token` seconds before the first chunk, then
`tokens_per_s` (a token is ~4 characters, the same estimate the usage counts use).

    srv.set_stream_pace("openai", first_token=0.3, tokens_per_s=40)   # every stream of openai
    srv.script("openai", Stream({"step": ...}, cut_after=120))        # one scripted stream

Wire formats (what the real SDKs parse):
- OpenAI / OpenAI-compatible: `chat.completion.chunk` objects; tool-call replies stream
  the function arguments as `delta.tool_calls[0].function.arguments` pieces, JSON-mode
  replies as `delta.content`; `stream_options.include_usage` adds the usage chunk
  (empty `choices`), then `data: [DONE]`.
- Groq: the same chunks; usage rides in the last chunk's `x_groq.usage`.
- Gemini: `GenerateContentResponse` objects with text parts (JSON mode); a function-call
  reply arrives whole in one chunk, as the real API sends it.

Every chunk written is recorded on the request (`rec.chunks`: (monotonic time, text so far)),
so tests and benchmarks can tell when a given piece of the answer left the "model".

`WireReply` is a reply given exactly as written (status, JSON body or SSE events): the shapes
studied in real provider recordings (tests/fakes/llm_shapes.py) are served through it.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from aiohttp import web

if TYPE_CHECKING:
    from tests.fakes.llm_server import Raw, RecordedRequest, Reply

CHARS_PER_TOKEN = 4


@dataclass
class Pace:
    """How fast a stream flows: delay before the first chunk, then tokens per second."""

    first_token: float = 0.0
    tokens_per_s: float = 0.0  # 0: as fast as the socket takes it
    chars_per_chunk: int = CHARS_PER_TOKEN


@dataclass
class Stream:
    """A reply that streams (when the request asks for a stream) with its own pace or fault.

    `cut_after`: characters of output sent before the connection drops (a provider failing
    mid-stream); `stall_after` + `stall`: characters sent before the stream goes silent for
    `stall` seconds (a timeout mid-stream)."""

    obj: Any  # dict / callable (structured reply) or str (verbatim output)
    pace: Pace | None = None
    cut_after: int | None = None
    stall_after: int | None = None
    stall: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass
class WireReply:
    """One HTTP answer written as given: a JSON body, or server-sent events.

    `events` are (event name or None, payload) pairs; a payload that is not a str is JSON.
    `separator` ends each event (Gemini's SSE uses CRLF pairs, OpenAI's and Groq's LF pairs)."""

    status: int = 200
    body: Any = None
    events: list[tuple[str | None, Any]] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    separator: str = "\n\n"


async def send_wire(request: web.Request, rec: RecordedRequest, reply: WireReply) -> web.StreamResponse:
    """Write `reply` on the wire; streamed events are recorded in `rec.chunks` like paced ones."""
    rec.status = reply.status
    if reply.events is None:
        return web.json_response(reply.body, status=reply.status, headers=reply.headers)
    response = web.StreamResponse(status=reply.status, headers={
        "Content-Type": "text/event-stream", "Cache-Control": "no-cache", **reply.headers})
    await response.prepare(request)
    for name, payload in reply.events:
        data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        head = f"event: {name}\n" if name else ""
        await response.write(f"{head}data: {data}{reply.separator}".encode())
        rec.chunks.append((time.monotonic(), data))
    await response.write_eof()
    return response


def wants_stream(rec: RecordedRequest) -> bool:
    return rec.provider == "gemini" and ":streamGenerateContent" in rec.path or bool(rec.body.get("stream"))


def pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), max(1, size))] or [""]


async def _write_event(response: web.StreamResponse, payload: Any) -> None:
    data = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
    await response.write(f"data: {data}\n\n".encode())


async def _begin(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse(status=200, headers={"Content-Type": "text/event-stream",
                                                      "Cache-Control": "no-cache"})
    await response.prepare(request)
    return response


async def _paced(rec: RecordedRequest, response: web.StreamResponse, text: str, pace: Pace, fault: Stream | None,
                 emit) -> bool:
    """Send `text` in paced pieces through `emit(piece)`; False when the scripted fault cut it."""
    if pace.first_token:
        await asyncio.sleep(pace.first_token)
    sent = ""
    interval = (pace.chars_per_chunk / CHARS_PER_TOKEN) / pace.tokens_per_s if pace.tokens_per_s else 0.0
    next_at = time.monotonic()
    for piece in pieces(text, pace.chars_per_chunk):
        if fault is not None and fault.cut_after is not None and len(sent) + len(piece) > fault.cut_after:
            piece = piece[: max(0, fault.cut_after - len(sent))]
            if piece:
                await emit(piece)
                sent += piece
                rec.chunks.append((time.monotonic(), sent))
            return False
        if fault is not None and fault.stall_after is not None and len(sent) >= fault.stall_after and fault.stall:
            stall, fault = fault.stall, None
            await asyncio.sleep(stall)
        if interval:
            next_at += interval
            delay = next_at - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
        await emit(piece)
        sent += piece
        rec.chunks.append((time.monotonic(), sent))
    return True


async def stream_openai(request: web.Request, rec: RecordedRequest, *, text: str, tool_name: str | None,
                        tokens: tuple[int, int], pace: Pace, fault: Stream | None, counter: int) -> web.StreamResponse:
    """Chat-completions chunks: tool-call argument deltas, or content deltas."""
    body = rec.body
    base = {"id": f"chatcmpl-fake-{counter}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake"), "system_fingerprint": None}
    response = await _begin(request)
    if tool_name is not None:
        first_delta = {"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": f"call_{counter}", "type": "function", "function": {"name": tool_name, "arguments": ""}}]}
    else:
        first_delta = {"role": "assistant", "content": ""}
    await _write_event(response, base | {"choices": [{"index": 0, "delta": first_delta, "finish_reason": None}]})

    async def emit(piece: str) -> None:
        if tool_name is not None:
            delta = {"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}
        else:
            delta = {"content": piece}
        await _write_event(response, base | {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]})

    if not await _paced(rec, response, text, pace, fault, emit):
        return _drop(request, response)
    usage = {"prompt_tokens": tokens[0], "completion_tokens": tokens[1], "total_tokens": sum(tokens)}
    last: dict[str, Any] = base | {"choices": [{"index": 0, "delta": {},
                                               "finish_reason": "tool_calls" if tool_name else "stop"}]}
    if rec.provider == "groq":
        last["x_groq"] = {"id": base["id"], "usage": usage}
    await _write_event(response, last)
    if (body.get("stream_options") or {}).get("include_usage"):
        await _write_event(response, base | {"choices": [], "usage": usage})
    await _write_event(response, "[DONE]")
    await response.write_eof()
    return response


async def stream_gemini(request: web.Request, rec: RecordedRequest, *, text: str, function_name: str | None,
                        tokens: tuple[int, int], pace: Pace, fault: Stream | None) -> web.StreamResponse:
    """`streamGenerateContent?alt=sse`: text parts as they grow; a function call arrives whole."""
    response = await _begin(request)
    usage = {"promptTokenCount": tokens[0], "candidatesTokenCount": tokens[1], "totalTokenCount": sum(tokens)}

    def chunk(part: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"role": "model", "parts": [part]}, "index": 0}
        if finish:
            candidate["finishReason"] = finish
        return {"candidates": [candidate], "usageMetadata": usage, "modelVersion": rec.model}

    if function_name is not None:
        try:
            args = json.loads(text)
        except json.JSONDecodeError:
            args = None
        if isinstance(args, dict):
            if pace.first_token:
                await asyncio.sleep(pace.first_token)
            await _write_event(response, chunk({"functionCall": {"name": function_name, "args": args}}, "STOP"))
            rec.chunks.append((time.monotonic(), text))
            await response.write_eof()
            return response

    async def emit(piece: str) -> None:
        await _write_event(response, chunk({"text": piece}))

    if not await _paced(rec, response, text, pace, fault, emit):
        return _drop(request, response)
    await _write_event(response, chunk({"text": ""}, "STOP"))
    await response.write_eof()
    return response


def _drop(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """The connection drops mid-body, as a crashed upstream or proxy does."""
    if request.transport is not None:
        request.transport.abort()
    return response


def output_of(step: Stream) -> Reply | Raw:
    """The plain reply a Stream step carries (rendered like any other reply)."""
    from tests.fakes.llm_server import Raw, Reply

    if isinstance(step.obj, str):
        return Raw(step.obj, step.input_tokens, step.output_tokens)
    return Reply(step.obj, step.input_tokens, step.output_tokens)
