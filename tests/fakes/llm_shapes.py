"""Provider replies in the shapes real APIs send, for the fake LLM server (`Wire` steps).

Every other fake reply was written from what askdesk needs; these follow recorded responses
of the real APIs (VCR cassettes in pydantic/pydantic-ai `tests/models/cassettes/`), field for
field where it matters to a parser: ids, dated model names, `refusal: null`, `usage: null` on
every chunk but the last, usage details, Groq's `x_groq`, Gemini's `responseId`, CRLF event
separators, usage metadata without `candidatesTokenCount` until the last chunk. Where each
shape was studied: docs/provider-replies.md. Written from reading them, not copied.

Each builder returns one step that answers in kind: a streamed request gets server-sent
events, a plain one a JSON body (`srv.script("openai", shapes.openai_refusal())`).

    openai_reply(obj)              tool call (or JSON-mode content), realistic fields
    openai_refusal()               `refusal` instead of a tool call (streamed: refusal deltas)
    openai_length(obj, cut)        finish_reason "length": the arguments cut off
    compatible_reply(obj, flavour) OpenAI-compatible gateways: zero values for absent fields
                                   (`refusal: ""`, `finish_reason: ""`; Snowflake Cortex) or a
                                   tool call with `id: ""` and `extra_content` (Gemini's endpoint)
    groq_reply(obj)                Groq: the tool call whole in one delta, usage in x_groq and usage
    groq_tool_use_failed(kind)     Groq's 400 `tool_use_failed` with `failed_generation`
                                   (streamed: HTTP 200, reasoning deltas, then `event: error`)
    gemini_reply(obj)              functionCall (or JSON text), thoughtSignature, responseId
    gemini_prompt_blocked(reason)  `promptFeedback.blockReason`, no candidates at all
    gemini_safety_stop(after)      finishReason SAFETY, candidate without content parts
    gemini_max_tokens(obj, cut)    finishReason MAX_TOKENS: no parts (non-streamed), text cut (streamed)
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

from tests.fakes.llm_server import RecordedRequest, Wire, _gemini_function_name, _openai_tool_name
from tests.fakes.llm_stream import WireReply, wants_stream

REFUSAL = "I'm sorry, I cannot assist with that request."
GROQ_NO_TOOL_CALL = "Tool choice is required, but model did not call a tool"
SAFETY_CATEGORIES = ("HARM_CATEGORY_HATE_SPEECH", "HARM_CATEGORY_DANGEROUS_CONTENT", "HARM_CATEGORY_HARASSMENT",
                     "HARM_CATEGORY_SEXUALLY_EXPLICIT")
# a thoughtSignature is opaque base64 (gemini-3 sends one on a function-call part)
THOUGHT_SIGNATURE = "EpwICpkIAXLI2nxlU6gsWZaZHRYkX1orzuM8vSUFwaAt1JRxEC2hJzPA"

_counter = 0


def _next_id() -> int:
    global _counter
    _counter += 1
    return _counter


def text_of(obj: Any, *, ascii_only: bool = False) -> str:
    """The model output for `obj`: a str verbatim, anything else as JSON."""
    return obj if isinstance(obj, str) else json.dumps(obj, ensure_ascii=ascii_only)


def token_pieces(text: str) -> list[str]:
    """Split like a tokenizer does in the recordings: `{"` `country` `":"` `UK` `"}` — word runs,
    space runs and punctuation runs, so pieces break inside JSON strings and escapes (`\\` | `u00e9`)."""
    return re.findall(r"\w+|\s+|[^\w\s]+", text) or [""]


def sized_pieces(text: str, size: int) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _tokens(rec: RecordedRequest, text: str) -> tuple[int, int]:
    return max(1, len(rec.text) // 4), max(1, len(text) // 4)


# --------------------------------------------------------------------------- OpenAI


def _openai_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0,
                                          "rejected_prediction_tokens": 0}}


def _dated(model: str) -> str:
    """OpenAI answers with the dated snapshot of the model asked for."""
    return model if re.search(r"\d{4}-\d{2}-\d{2}$", model) else f"{model}-2025-04-14"


def _openai_base(rec: RecordedRequest, n: int, chunk: bool) -> dict[str, Any]:
    return {"id": f"chatcmpl-Rec{n:08d}", "object": "chat.completion.chunk" if chunk else "chat.completion",
            "created": int(time.time()), "model": _dated(str(rec.body.get("model", "gpt-4.1-mini"))),
            "service_tier": "default", "system_fingerprint": "fp_d0469e1700"}


def _openai_events(rec: RecordedRequest, n: int, first: dict[str, Any], deltas: list[dict[str, Any]],
                   finish: str, usage: dict[str, Any]) -> list[tuple[str | None, Any]]:
    """Chunks as OpenAI streams them: `usage: null` and an `obfuscation` pad on each while
    stream_options.include_usage is set, then one chunk with empty `choices` carrying usage."""
    include_usage = bool((rec.body.get("stream_options") or {}).get("include_usage"))
    base = _openai_base(rec, n, chunk=True)

    def chunk(delta: dict[str, Any], finish_reason: str | None, i: int) -> dict[str, Any]:
        out = base | {"choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]}
        if include_usage:
            out |= {"usage": None, "obfuscation": "x" * (4 + i % 9)}
        return out

    events: list[tuple[str | None, Any]] = [(None, chunk(first, None, 0))]
    events += [(None, chunk(delta, None, i + 1)) for i, delta in enumerate(deltas)]
    events.append((None, chunk({}, finish, len(deltas) + 1)))
    if include_usage:
        events.append((None, base | {"choices": [], "usage": usage, "obfuscation": "khVgg3RsaN"}))
    events.append((None, "[DONE]"))
    return events


def _openai_answer(rec: RecordedRequest, text: str, finish: str | None = None) -> WireReply:
    n = _next_id()
    tool = _openai_tool_name(rec.body)
    usage = _openai_usage(*_tokens(rec, text))
    if wants_stream(rec):
        if tool is not None:
            first = {"role": "assistant", "content": None, "tool_calls": [{
                "index": 0, "id": f"call_Rec{n:020d}", "type": "function",
                "function": {"name": tool, "arguments": ""}}], "refusal": None}
            deltas = [{"tool_calls": [{"index": 0, "function": {"arguments": p}}]} for p in token_pieces(text)]
        else:
            first = {"role": "assistant", "content": "", "refusal": None}
            deltas = [{"content": p} for p in token_pieces(text)]
        return WireReply(events=_openai_events(rec, n, first, deltas, finish or ("tool_calls" if tool else "stop"),
                                               usage))
    if tool is not None:
        message = {"role": "assistant", "content": None, "refusal": None, "annotations": [], "tool_calls": [{
            "id": f"call_Rec{n:020d}", "type": "function", "function": {"name": tool, "arguments": text}}]}
    else:
        message = {"role": "assistant", "content": text, "refusal": None, "annotations": []}
    return WireReply(body=_openai_base(rec, n, chunk=False) | {
        "choices": [{"index": 0, "message": message, "logprobs": None,
                     "finish_reason": finish or ("tool_calls" if tool else "stop")}],
        "usage": usage})


def openai_reply(obj: Any, *, ascii_only: bool = False) -> Wire:
    """A tool call (JSON-mode content when no tool was offered), streamed token piece by piece.
    `ascii_only`: non-ASCII text as `\\u` escapes, which the stream then splits mid-escape."""
    return Wire(lambda rec: _openai_answer(rec, text_of(obj, ascii_only=ascii_only)), "openai_reply")


def openai_length(obj: Any, cut: int) -> Wire:
    """finish_reason "length": max_tokens reached after `cut` characters of the arguments."""
    return Wire(lambda rec: _openai_answer(rec, text_of(obj)[:cut], finish="length"), "openai_length")


def openai_refusal(text: str = REFUSAL) -> Wire:
    """The model declines: `refusal` set, no tool call, `content` null, finish_reason "stop"."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        usage = _openai_usage(_tokens(rec, text)[0], max(1, len(text) // 4))
        if wants_stream(rec):
            pieces = token_pieces(text)
            first = {"role": "assistant", "content": None, "refusal": pieces[0]}
            return WireReply(events=_openai_events(rec, n, first, [{"refusal": p} for p in pieces[1:]], "stop", usage))
        message = {"role": "assistant", "content": None, "refusal": text, "annotations": []}
        return WireReply(body=_openai_base(rec, n, chunk=False) | {
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}], "usage": usage})

    return Wire(render, "openai_refusal")


def compatible_reply(obj: Any, flavour: str = "zero_values") -> Wire:
    """An OpenAI-compatible gateway's chat.completion, always plain JSON (also to `stream: true`).
    `zero_values` (Snowflake Cortex): every absent field as its zero value — `refusal: ""`,
    `finish_reason: ""`, `id: ""`, `function_call: {name: "", arguments: ""}`, empty `audio`;
    `gemini_openai` (Gemini's OpenAI endpoint): the tool call's `id: ""`, `extra_content` with a
    thought signature, no system_fingerprint."""
    if flavour not in ("zero_values", "gemini_openai"):
        raise ValueError(f"unknown flavour {flavour!r}: zero_values | gemini_openai")

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        text = text_of(obj)
        tool = _openai_tool_name(rec.body)
        usage = _openai_usage(*_tokens(rec, text))
        if flavour == "gemini_openai":
            message: dict[str, Any] = {"role": "assistant", "extra_content": {"google": {
                "thought": True, "thought_signature": THOUGHT_SIGNATURE}}}
            message |= {"tool_calls": [{"id": "", "type": "function", "function": {"name": tool, "arguments": text}}]
                        } if tool else {"content": text}
            return WireReply(body={"id": f"3SE-aKjdCcCEz7I{n:06d}", "object": "chat.completion",
                                   "created": int(time.time()), "model": str(rec.body.get("model", "")),
                                   "choices": [{"index": 0, "message": message,
                                                "finish_reason": "tool_calls" if tool else "stop"}],
                                   "usage": {k: usage[k] for k in ("prompt_tokens", "completion_tokens",
                                                                   "total_tokens")}})
        message = {"annotations": None, "audio": {"data": "", "expires_at": 0, "id": "", "transcript": ""},
                   "content": "" if tool else text, "function_call": {"arguments": "", "name": ""},
                   "refusal": "", "role": "assistant",
                   "tool_calls": [{"custom": {"input": "", "name": ""}, "function": {"arguments": text, "name": tool},
                                   "id": f"toolu_bdrk_{n:024d}", "type": "function"}] if tool else None}
        return WireReply(body={"choices": [{"finish_reason": "", "index": 0,
                                            "logprobs": {"content": None, "refusal": None}, "message": message}],
                               "created": int(time.time()), "id": "", "model": str(rec.body.get("model", "")),
                               "object": "chat.completion", "service_tier": "", "system_fingerprint": "",
                               "usage": usage})

    return Wire(render, f"compatible_reply:{flavour}")


# --------------------------------------------------------------------------- Groq


def _groq_usage(prompt: int, completion: int) -> dict[str, Any]:
    return {"queue_time": 0.0049, "prompt_tokens": prompt, "prompt_time": 0.0146, "completion_tokens": completion,
            "completion_time": 0.1121, "total_tokens": prompt + completion, "total_time": 0.1267}


def _groq_base(rec: RecordedRequest, n: int, chunk: bool) -> dict[str, Any]:
    return {"id": f"chatcmpl-{n:08x}-3267-4ac1-a0cf-6aa7451877dc",
            "object": "chat.completion.chunk" if chunk else "chat.completion", "created": int(time.time()),
            "model": str(rec.body.get("model", "llama-3.3-70b-versatile")), "system_fingerprint": "fp_e8236260a9"}


def _groq_opening(rec: RecordedRequest, n: int, reasoning: str) -> list[tuple[str | None, Any]]:
    """The first chunk (role, empty content, x_groq id) and the reasoning deltas of a reasoning model."""
    base = _groq_base(rec, n, chunk=True)
    events: list[tuple[str | None, Any]] = [(None, base | {
        "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None,
                     "finish_reason": None}], "x_groq": {"id": f"req_rec{n:020d}", "seed": 27718886}})]
    for piece in token_pieces(reasoning) if reasoning else []:
        events.append((None, base | {"choices": [{"index": 0, "delta": {"reasoning": piece, "channel": "analysis"},
                                                  "logprobs": None, "finish_reason": None}]}))
    return events


def groq_reply(obj: Any, *, reasoning: str = "") -> Wire:
    """Groq's stream: reasoning deltas (gpt-oss), then the whole tool call in ONE delta, then a
    finish chunk carrying usage twice (`x_groq.usage` and `usage`); plain: a chat.completion."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        text = text_of(obj)
        tool = _openai_tool_name(rec.body)
        usage = _groq_usage(*_tokens(rec, text))
        base = _groq_base(rec, n, chunk=wants_stream(rec))
        call = {"id": f"fc_{n:08x}-4a4f-4689-b045-7d2411cf3bef", "type": "function",
                "function": {"name": tool, "arguments": text}}
        if wants_stream(rec):
            events = _groq_opening(rec, n, reasoning)
            delta = {"tool_calls": [call | {"index": 0}]} if tool else {"content": text}
            events.append((None, base | {"choices": [{"index": 0, "delta": delta, "logprobs": None,
                                                      "finish_reason": None}]}))
            events.append((None, base | {"choices": [{"index": 0, "delta": {}, "logprobs": None,
                                                      "finish_reason": "tool_calls" if tool else "stop"}],
                                         "x_groq": {"id": f"req_rec{n:020d}", "usage": usage}, "usage": usage}))
            events.append((None, "[DONE]"))
            return WireReply(events=events)
        message: dict[str, Any] = {"role": "assistant"}
        message |= {"tool_calls": [call]} if tool else {"content": text}
        if reasoning:
            message["reasoning"] = reasoning
        return WireReply(body=base | {
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": "tool_calls" if tool else "stop"}],
            "usage": usage, "usage_breakdown": None, "service_tier": "on_demand",
            "x_groq": {"id": f"req_rec{n:020d}", "seed": 1855351431}})

    return Wire(render, "groq_reply")


def groq_tool_use_failed(kind: str = "schema", *, generation: Any = None,
                         reasoning: str = "We need to call the tool.") -> Wire:
    """Groq validates the model's tool call itself and answers HTTP 400 when it fails:
    `kind="schema"` — the call did not match the tool's schema (`failed_generation` is the call
    the model wrote: `{"name": ..., "arguments": {...}}`); `kind="no_tool_call"` — tool_choice
    required a call and the model wrote text (`failed_generation` is that text, maybe empty).
    A streamed request gets HTTP 200 and the error as an `event: error` after the reasoning."""
    if kind not in ("schema", "no_tool_call"):
        raise ValueError(f"unknown tool_use_failed kind {kind!r}: schema | no_tool_call")

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        tool = _openai_tool_name(rec.body) or "tool"
        if kind == "schema":
            arguments = generation if generation is not None else {"query": "income limits"}
            failed = json.dumps({"name": tool, "arguments": arguments}, indent=None if wants_stream(rec) else 2)
            message = (f"Tool call validation failed: tool call validation failed: parameters for tool {tool} did "
                       "not match schema: errors: [missing properties: 'step', "
                       "additionalProperties 'query' not allowed]")
        else:
            failed = text_of(generation) if generation is not None else "maybe"
            message = GROQ_NO_TOOL_CALL
        error = {"message": message, "type": "invalid_request_error", "code": "tool_use_failed",
                 "failed_generation": failed}
        if wants_stream(rec):
            events = _groq_opening(rec, n, reasoning)
            events.append(("error", {"error": error | {"status_code": 400}}))
            return WireReply(events=events)
        return WireReply(status=400, body={"error": error})

    return Wire(render, f"groq_tool_use_failed:{kind}")


# --------------------------------------------------------------------------- Gemini


def _gemini_usage(prompt: int, completion: int | None, thoughts: int = 0) -> dict[str, Any]:
    """usageMetadata: `candidatesTokenCount` only once the model wrote something (the last chunk)."""
    usage: dict[str, Any] = {"promptTokenCount": prompt, "totalTokenCount": prompt + (completion or 0) + thoughts,
                             "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
    if completion is not None:
        usage["candidatesTokenCount"] = completion
        usage["candidatesTokensDetails"] = [{"modality": "TEXT", "tokenCount": completion}]
    if thoughts:
        usage["thoughtsTokenCount"] = thoughts
    return usage


def _gemini_envelope(rec: RecordedRequest, n: int, usage: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return fields | {"usageMetadata": usage, "modelVersion": rec.model, "responseId": f"w1peaMz6INOvnvgP{n:08d}"}


def _gemini_ratings(blocked: str | None) -> list[dict[str, Any]]:
    ratings: list[dict[str, Any]] = []
    for category in SAFETY_CATEGORIES:
        rating: dict[str, Any] = {"category": category, "probability": "NEGLIGIBLE"}
        if category == blocked:
            rating = {"blocked": True, "category": category, "probability": "MEDIUM"}
        ratings.append(rating)
    return ratings


def _gemini_text_events(rec: RecordedRequest, n: int, text: str, prompt: int, *, size: int,
                        finish: str = "STOP", thoughts: int = 0) -> list[tuple[str | None, Any]]:
    """JSON-mode text in chunks of a few tokens; only the last has finishReason and full usage."""
    pieces = sized_pieces(text, size)
    events: list[tuple[str | None, Any]] = []
    for i, piece in enumerate(pieces):
        last = i == len(pieces) - 1
        candidate: dict[str, Any] = {"content": {"parts": [{"text": piece}], "role": "model"}}
        if last:
            candidate |= {"finishReason": finish, "index": 0}
        usage = _gemini_usage(prompt, max(1, len(text) // 4) if last else None, thoughts)
        events.append((None, _gemini_envelope(rec, n, usage, candidates=[candidate])))
    return events


def gemini_reply(obj: Any, *, thoughts: int = 120, chunk_chars: int = 24) -> Wire:
    """A function call (JSON text in JSON mode) as gemini-2.5/3 send it: avgLogprobs, a
    thoughtSignature on the call, thoughtsTokenCount. Streamed with function declarations:
    the call whole in one chunk, then an empty text part with finishReason STOP; in JSON
    mode: text chunks of ~`chunk_chars`, CRLF-separated like the real SSE."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        text = text_of(obj)
        prompt, completion = _tokens(rec, text)
        function = _gemini_function_name(rec.body)
        call_part = {"functionCall": {"name": function, "args": obj}, "thoughtSignature": THOUGHT_SIGNATURE}
        if wants_stream(rec):
            if function is not None:
                first = _gemini_envelope(rec, n, _gemini_usage(prompt, completion, thoughts), candidates=[
                    {"content": {"parts": [call_part], "role": "model"}, "index": 0}])
                last = _gemini_envelope(rec, n, _gemini_usage(prompt, completion, thoughts), candidates=[
                    {"content": {"parts": [{"text": ""}], "role": "model"}, "finishReason": "STOP", "index": 0}])
                return WireReply(events=[(None, first), (None, last)], separator="\r\n\r\n")
            return WireReply(events=_gemini_text_events(rec, n, text, prompt, size=chunk_chars, thoughts=thoughts),
                             separator="\r\n\r\n")
        part = call_part if function is not None else {"text": text}
        return WireReply(body=_gemini_envelope(rec, n, _gemini_usage(prompt, completion, thoughts), candidates=[
            {"content": {"parts": [part], "role": "model"}, "finishReason": "STOP", "avgLogprobs": -5.46e-06}]))

    return Wire(render, "gemini_reply")


def gemini_prompt_blocked(reason: str = "SAFETY", message: str | None = None) -> Wire:
    """The prompt itself is blocked: `promptFeedback.blockReason`, no `candidates` key at all
    (streamed: one event of the same). `reason`: SAFETY | OTHER | BLOCKLIST | PROHIBITED_CONTENT |
    MODEL_ARMOR (the recorded one, with `blockReasonMessage`)."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        prompt = _tokens(rec, "")[0]
        feedback: dict[str, Any] = {"blockReason": reason}
        if reason == "SAFETY":
            feedback["safetyRatings"] = _gemini_ratings("HARM_CATEGORY_DANGEROUS_CONTENT")
        if message or reason == "MODEL_ARMOR":
            feedback["blockReasonMessage"] = message or "The prompt violated Prompt Injection and Jailbreak filters."
        body = _gemini_envelope(rec, n, {"promptTokenCount": prompt, "totalTokenCount": prompt},
                                promptFeedback=feedback)
        if wants_stream(rec):
            return WireReply(events=[(None, body)], separator="\r\n\r\n")
        return WireReply(body=body)

    return Wire(render, f"gemini_prompt_blocked:{reason}")


def gemini_safety_stop(obj: Any = None, *, after: int = 0, chunk_chars: int = 24) -> Wire:
    """The answer is blocked: a candidate with finishReason SAFETY, safetyRatings (one
    `blocked: true`) and no content parts (`content: {}`). Streamed: `after` characters of
    `obj`'s JSON text first, then the SAFETY chunk without content."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        prompt = _tokens(rec, "")[0]
        blocked = {"finishReason": "SAFETY", "index": 0, "safetyRatings": _gemini_ratings("HARM_CATEGORY_HATE_SPEECH")}
        if wants_stream(rec):
            text = text_of(obj)[:after] if obj is not None and after else ""
            events: list[tuple[str | None, Any]] = []
            for piece in sized_pieces(text, chunk_chars) if text else []:
                events.append((None, _gemini_envelope(rec, n, _gemini_usage(prompt, None), candidates=[
                    {"content": {"parts": [{"text": piece}], "role": "model"}}])))
            events.append((None, _gemini_envelope(rec, n, _gemini_usage(prompt, None), candidates=[blocked])))
            return WireReply(events=events, separator="\r\n\r\n")
        return WireReply(body=_gemini_envelope(rec, n, _gemini_usage(prompt, None),
                                               candidates=[{"content": {}} | blocked]))

    return Wire(render, "gemini_safety_stop")


def gemini_max_tokens(obj: Any = None, *, cut: int = 40, chunk_chars: int = 24) -> Wire:
    """finishReason MAX_TOKENS. Not streamed: the thinking model spent the budget and the
    candidate's content is `{"role": "model"}` with no parts (recorded on gemini-2.5-pro).
    Streamed (JSON mode): `cut` characters of `obj`'s JSON, the last chunk MAX_TOKENS."""

    def render(rec: RecordedRequest) -> WireReply:
        n = _next_id()
        prompt = _tokens(rec, "")[0]
        if wants_stream(rec) and obj is not None:
            return WireReply(events=_gemini_text_events(rec, n, text_of(obj)[:cut], prompt, size=chunk_chars,
                                                        finish="MAX_TOKENS"), separator="\r\n\r\n")
        candidate = {"content": {"role": "model"}, "finishReason": "MAX_TOKENS", "index": 0}
        body = _gemini_envelope(rec, n, _gemini_usage(prompt, None, thoughts=2), candidates=[candidate])
        if wants_stream(rec):
            return WireReply(events=[(None, body)], separator="\r\n\r\n")
        return WireReply(body=body)

    return Wire(render, "gemini_max_tokens")
