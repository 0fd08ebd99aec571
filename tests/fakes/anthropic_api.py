"""Anthropic's Messages API (`POST /v1/messages`) for the fake LLM server, as the real API writes it.

The real `anthropic` SDK is pointed at the fake LLM server (`ANTHROPIC_BASE_URL=<url>`, the SDK
appends `/v1/messages`); scripted replies for the "anthropic" queue are answered here:

- not streamed: a `message` whose content is one `tool_use` block (the forced tool of the
  request's `tool_choice`) with the arguments as `input`, `stop_reason: "tool_use"`, a dated
  model id and usage with its cache fields; output that is not a JSON object comes back as a
  `text` block with `stop_reason: "end_turn"` (instructor then re-asks);
- streamed (`"stream": true`): named server-sent events — `message_start` (usage with the input
  tokens and `output_tokens: 1`), `content_block_start` (a `tool_use` block with `input: {}`),
  `ping`, `content_block_delta`s whose `input_json_delta.partial_json` pieces split the
  arguments anywhere (the first one empty), `content_block_stop`, `message_delta` (the stop
  reason; usage with the output tokens only) and `message_stop`; each event's JSON padded with
  spaces before its closing brace, as the API sends it;
- errors: `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"},
  "request_id": "req_…"}` with the API's type for each status (529 overloaded_error, 429
  rate_limit_error, 400 invalid_request_error, …).

The shapes were studied in pydantic/pydantic-ai's recordings of the real API
(`tests/models/cassettes/test_anthropic/test_anthropic_tool_output.yaml`: a tool_use message;
`test_request_stream_fallback_for_high_max_tokens.yaml` and
`tests/cassettes/test_tool_search/test_anthropic_native_tool_search_streaming.yaml`: the event
stream, its padding and a tool_use block's `input_json_delta` pieces;
`test_anthropic_explicit_effort_xhigh_unsupported_model_errors.yaml`: the error body) and in
pydantic-ai's `test_anthropic_refusal_stop_details*` (a refusal: no content, `stop_details`).
Written from reading them, not copied.

The builders at the end are `Wire` steps that answer exactly as written (streamed events are
recorded on the request): `anthropic_reply(obj)`, and the replies that are not a whole answer,
`anthropic_max_tokens(obj, cut)`, `anthropic_refusal()`, `anthropic_stream_error()`.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from aiohttp import web

from tests.fakes.llm_stream import Pace, Stream, WireReply, _begin, _drop, _paced, wants_stream

if TYPE_CHECKING:
    from tests.fakes.llm_server import RecordedRequest, Wire

ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
               404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               504: "timeout_error", 529: "overloaded_error"}
ERROR_MESSAGES = {529: "Overloaded", 500: "Internal server error"}
_counter = 0


def _next() -> int:
    global _counter
    _counter += 1
    return _counter


def _id(prefix: str, n: int) -> str:
    return f"{prefix}_01{n:022d}"


SNAPSHOTS = {"claude-sonnet-4-5": "claude-sonnet-4-5-20250929", "claude-haiku-4-5": "claude-haiku-4-5-20251001"}


def dated(model: str) -> str:
    """The model id the API answers with: the dated snapshot of an alias that has one
    (`claude-sonnet-4-5` -> `claude-sonnet-4-5-20250929`), newer models as asked."""
    return SNAPSHOTS.get(model, model)


def tool_name(body: dict[str, Any]) -> str | None:
    """The tool the request forces (`tool_choice: {type: tool, name}`), else the first offered."""
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") == "tool":
        return choice.get("name")
    tools = body.get("tools") or []
    return tools[0].get("name") if tools else None


def usage(input_tokens: int, output_tokens: int) -> dict[str, Any]:
    return {"input_tokens": input_tokens, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": output_tokens, "service_tier": "standard"}


def error_body(status: int, message: str) -> dict[str, Any]:
    kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    if message == "scripted error":
        message = ERROR_MESSAGES.get(status, message)
    return {"type": "error", "error": {"type": kind, "message": message}, "request_id": _id("req", _next())}


def _parsed(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def message(rec: RecordedRequest, text: str, tokens: tuple[int, int], *, stop_reason: str | None = None,
            content: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    """A non-streamed reply: the forced tool called with `text` as its input."""
    n = _next()
    tool = tool_name(rec.body)
    if content is None:
        arguments = _parsed(text) if tool is not None else None
        if arguments is not None:
            content = [{"type": "tool_use", "id": _id("toolu", n), "name": tool, "input": arguments}]
        else:
            content = [{"type": "text", "text": text}]
    if stop_reason is None:
        stop_reason = "tool_use" if content and content[0]["type"] == "tool_use" else "end_turn"
    return {"id": _id("msg", n), "type": "message", "role": "assistant", "model": dated(str(rec.body.get("model"))),
            "content": content, "stop_reason": stop_reason, "stop_sequence": None, "usage": usage(*tokens), **extra}


def padded(payload: dict[str, Any], n: int) -> str:
    """An event's JSON with the API's padding: spaces before the closing brace."""
    return json.dumps(payload, separators=(",", ":"))[:-1] + " " * (1 + n * 7 % 13) + "}"


def _start(rec: RecordedRequest, n: int, input_tokens: int) -> dict[str, Any]:
    return {"type": "message_start", "message": {
        "model": dated(str(rec.body.get("model"))), "id": _id("msg", n), "type": "message", "role": "assistant",
        "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage(input_tokens, 1)}}


def _block_start(tool: str | None, n: int) -> dict[str, Any]:
    block = {"type": "tool_use", "id": _id("toolu", n), "name": tool, "input": {}} if tool else {"type": "text",
                                                                                                  "text": ""}
    return {"type": "content_block_start", "index": 0, "content_block": block}


def _delta(tool: str | None, piece: str) -> dict[str, Any]:
    delta = {"type": "input_json_delta", "partial_json": piece} if tool else {"type": "text_delta", "text": piece}
    return {"type": "content_block_delta", "index": 0, "delta": delta}


def _message_delta(stop_reason: str, output_tokens: int, **delta: Any) -> dict[str, Any]:
    return {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None, **delta},
            "usage": {"output_tokens": output_tokens}}


async def stream_messages(request: web.Request, rec: RecordedRequest, *, text: str, tokens: tuple[int, int],
                          pace: Pace, fault: Stream | None) -> web.StreamResponse:
    """The reply as the API streams it, paced; a scripted fault cuts or stalls it."""
    n = _next()
    tool = tool_name(rec.body)
    response = await _begin(request)
    count = 0

    async def event(name: str, payload: dict[str, Any]) -> None:
        nonlocal count
        count += 1
        await response.write(f"event: {name}\ndata: {padded(payload, count)}\n\n".encode())

    await event("message_start", _start(rec, n, tokens[0]))
    await event("content_block_start", _block_start(tool, n))
    await event("ping", {"type": "ping"})
    if tool:
        await event("content_block_delta", _delta(tool, ""))

    async def emit(piece: str) -> None:
        await event("content_block_delta", _delta(tool, piece))

    if not await _paced(rec, response, text, pace, fault, emit):
        return _drop(request, response)
    await event("content_block_stop", {"type": "content_block_stop", "index": 0})
    await event("message_delta", _message_delta("tool_use" if tool else "end_turn", tokens[1]))
    await event("message_stop", {"type": "message_stop"})
    await response.write_eof()
    return response


# --------------------------------------------------------------------------- replies that are not an answer


def _tokens(rec: RecordedRequest, text: str) -> tuple[int, int]:
    return max(1, len(rec.text) // 4), max(1, len(text) // 4)


def _events(rec: RecordedRequest, pieces: list[str], stop_reason: str, output_tokens: int,
            **delta: Any) -> list[tuple[str | None, Any]]:
    n = _next()
    tool = tool_name(rec.body)
    events: list[tuple[str, dict[str, Any]]] = [("message_start", _start(rec, n, _tokens(rec, "")[0]))]
    if pieces:
        events += [("content_block_start", _block_start(tool, n)), ("ping", {"type": "ping"})]
        events += [("content_block_delta", _delta(tool, p)) for p in (["", *pieces] if tool else pieces)]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    events += [("message_delta", _message_delta(stop_reason, output_tokens, **delta)),
               ("message_stop", {"type": "message_stop"})]
    return [(name, padded(payload, i)) for i, (name, payload) in enumerate(events)]


def _pieces(text: str) -> list[str]:
    """Argument pieces the way the recordings split them: a few characters, anywhere."""
    return [text[i:i + 7] for i in range(0, len(text), 7)]


def _text(obj: Any) -> str:
    return obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=False)


def _wire(render, name: str) -> Wire:
    from tests.fakes.llm_server import Wire

    return Wire(render, name)


def anthropic_reply(obj: Any) -> Wire:
    """The forced tool called with `obj`, written exactly as the API writes it (streamed: every
    event recorded on the request, for tests that read the wire)."""

    def render(rec: RecordedRequest) -> WireReply:
        text = _text(obj)
        tokens = _tokens(rec, text)
        if wants_stream(rec):
            return WireReply(events=_events(rec, _pieces(text), "tool_use", tokens[1]),
                             headers={"Content-Type": "text/event-stream; charset=utf-8"})
        return WireReply(body=message(rec, text, tokens))

    return _wire(render, "anthropic_reply")


def anthropic_max_tokens(obj: Any, cut: int) -> Wire:
    """`stop_reason: "max_tokens"` after `cut` characters of the tool's arguments: streamed, the
    pieces so far and a `message_delta` with the stop reason; not streamed, the tool_use block
    with the `input` the API could parse of them (here none: `{}`)."""

    def render(rec: RecordedRequest) -> WireReply:
        text = _text(obj)[:cut]
        output_tokens = max(1, len(text) // 4)
        if wants_stream(rec):
            return WireReply(events=_events(rec, _pieces(text), "max_tokens", output_tokens),
                             headers={"Content-Type": "text/event-stream; charset=utf-8"})
        n = _next()
        block = {"type": "tool_use", "id": _id("toolu", n), "name": tool_name(rec.body), "input": {}}
        return WireReply(body=message(rec, text, (_tokens(rec, text)[0], output_tokens), stop_reason="max_tokens",
                                      content=[block]))

    return _wire(render, "anthropic_max_tokens")


def anthropic_refusal(category: str | None = "cyber") -> Wire:
    """The model declines: no content, `stop_reason: "refusal"` and `stop_details` naming the
    policy category (streamed: `message_start`, then a `message_delta` with both)."""
    details = {"type": "refusal", "category": category, "explanation": None}

    def render(rec: RecordedRequest) -> WireReply:
        if wants_stream(rec):
            return WireReply(events=_events(rec, [], "refusal", 0, stop_details=details),
                             headers={"Content-Type": "text/event-stream; charset=utf-8"})
        return WireReply(body=message(rec, "", (_tokens(rec, "")[0], 0), stop_reason="refusal", content=[],
                                      stop_details=details))

    return _wire(render, "anthropic_refusal")


def anthropic_stream_error(kind: str = "overloaded_error", message_text: str = "Overloaded") -> Wire:
    """An error inside a stream that began with HTTP 200: `message_start`, then `event: error`
    with the error body (how the API reports overload mid-stream); not streamed, the same error
    with its HTTP status."""
    status = {v: k for k, v in ERROR_TYPES.items()}.get(kind, 500)

    def render(rec: RecordedRequest) -> WireReply:
        body = {"type": "error", "error": {"type": kind, "message": message_text}, "request_id": _id("req", _next())}
        if not wants_stream(rec):
            return WireReply(status=status, body=body)
        events = [("message_start", padded(_start(rec, _next(), _tokens(rec, "")[0]), 1)), ("error", body)]
        return WireReply(events=events, headers={"Content-Type": "text/event-stream; charset=utf-8"})

    return _wire(render, "anthropic_stream_error")
