"""Gemini through google-genai + instructor (function-calling mode), with Gemini's quirks.

Env: GEMINI_API_KEY or GOOGLE_API_KEY (required), GOOGLE_GEMINI_BASE_URL (optional).
Kept here and nowhere else:
- messages: system -> system_instruction, assistant -> "model" role, tool results ->
  tagged user text; consecutive turns of one role are merged (Gemini wants alternation);
- schema subset: Gemini function declarations take an OpenAPI-style subset, so the
  response model's JSON schema is rewritten (oneOf -> anyOf, discriminator dropped,
  const -> one-value enum, titles/defaults/additionalProperties dropped) before
  instructor maps it; the parsed output is returned as the caller's own class.
  Gemini cannot declare a free-form object (a `dict[str, Any]` field has no properties and
  is rejected with "should be non-empty for OBJECT type"), so such a field is declared as
  a string holding a JSON object and decoded back before validation.
- per-request timeout and no SDK retries go in the client's HttpOptions (one client per
  timeout value, cached).
- streaming (`stream`) uses JSON mode (`responseMimeType: application/json` with the same
  Gemini-safe schema) over `streamGenerateContent`: Gemini sends a function call whole in
  one chunk, but JSON text grows chunk by chunk, so only JSON mode can show an answer as
  it is written.
- replies that are not an answer (docs/provider-replies.md): a blocked prompt
  (`promptFeedback.blockReason`, no candidates), a candidate stopped by SAFETY (no content
  parts) or cut off at MAX_TOKENS. `gemini_stop_problem` names them; such a reply is not
  re-asked (the same model stops the same way) and the chain moves on — also when a streamed
  answer's partial JSON would validate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel, ValidationError

from agent.messages import ChatMessage
from agent.providers.base import (Completion, ModelStopped, PartialFn, ProviderNotConfigured, ProviderPlugin,
                                  tool_result_text)
from agent.providers.retry import Backoff, structured_call
from agent.providers.streaming import streamed_call, tap

if TYPE_CHECKING:  # the SDK is imported when the provider is built, never by discovering it
    import instructor
    from google import genai
    from google.genai import types
    from tenacity import AsyncRetrying

T = TypeVar("T", bound=BaseModel)

_DROPPED_KEYS = {"title", "default", "additionalProperties", "discriminator", "examples", "$schema",
                 "propertyNames"}


def to_gemini_contents(messages: list[ChatMessage]) -> tuple[str | None, list[types.Content]]:
    """(system_instruction, contents) for generateContent."""
    from google.genai import types

    system = "\n\n".join(m.content for m in messages if m.role == "system") or None
    contents: list[types.Content] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "model" if message.role == "assistant" else "user"
        text = tool_result_text(message) if message.role == "tool" else message.content
        part = types.Part.from_text(text=text or " ")
        if contents and contents[-1].role == role:
            contents[-1].parts.append(part)
        else:
            contents.append(types.Content(role=role, parts=[part]))
    if not contents:  # Gemini rejects an empty conversation: the instruction becomes the turn
        contents = [types.Content(role="user", parts=[types.Part.from_text(text=system or " ")])]
        system = None
    return system, contents


def _is_free_form(node: Any) -> bool:
    return isinstance(node, dict) and node.get("type") == "object" and not node.get("properties")


def gemini_schema(node: Any) -> Any:
    """Rewrite a pydantic JSON schema into the subset Gemini function declarations accept."""
    if isinstance(node, list):
        return [gemini_schema(item) for item in node]
    if not isinstance(node, dict):
        return node
    if _is_free_form(node):
        description = (node.get("description", "") + " (a JSON object, as a string)").strip()
        return {"type": "string", "description": description}
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYS:
            continue
        if key in ("properties", "$defs"):  # keys are field / model names, keep them all
            out[key] = {name: gemini_schema(sub) for name, sub in value.items()}
        elif key == "oneOf":
            out["anyOf"] = gemini_schema(value)
        elif key == "const":
            out["enum"] = [value]
            out.setdefault("type", "string")
        else:
            out[key] = gemini_schema(value)
    if "required" in out:  # Gemini rejects required names that are not properties of the node
        out["required"] = [name for name in out["required"] if name in out.get("properties", {})]
        if not out["required"]:
            del out["required"]
    return out


def decode_free_form(data: Any, schema: Any, defs: dict[str, Any]) -> Any:
    """Undo the free-form-object-as-string rewrite: walk `data` along the original schema
    and json-decode strings where an object was declared."""
    if isinstance(schema, dict) and "$ref" in schema:
        schema = defs.get(schema["$ref"].rsplit("/", 1)[-1], {})
    if not isinstance(schema, dict):
        return data
    if _is_free_form(schema) and isinstance(data, str):
        try:
            decoded = json.loads(data) if data.strip() else {}
        except json.JSONDecodeError:
            return data  # validation reports it and instructor re-asks
        return decoded if isinstance(decoded, dict) else data
    for branch in schema.get("anyOf", []) + schema.get("oneOf", []):
        data = decode_free_form(data, branch, defs)
    if isinstance(data, dict) and "properties" in schema:
        props = schema["properties"]
        return {k: decode_free_form(v, props[k], defs) if k in props else v for k, v in data.items()}
    if isinstance(data, list) and "items" in schema:
        return [decode_free_form(item, schema["items"], defs) for item in data]
    return data


@lru_cache(maxsize=64)
def _gemini_model(response_model: type[BaseModel]) -> type[BaseModel]:
    """A same-named subclass whose JSON schema is the Gemini-safe one (instructor reads it)
    and whose validation first decodes free-form objects sent as JSON strings."""
    original = response_model.model_json_schema()
    schema = gemini_schema(original)
    defs = original.get("$defs", {})

    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return schema

    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> BaseModel:
        return response_model.model_validate.__func__(cls, decode_free_form(obj, original, defs), *args, **kwargs)

    return type(response_model.__name__, (response_model,), {
        "__module__": response_model.__module__,
        "__doc__": response_model.__doc__,
        "model_json_schema": classmethod(model_json_schema),
        "model_validate": classmethod(model_validate),
    })


def _reask_policy(max_retries: int, got_empty: Callable[[], bool] = lambda: False) -> AsyncRetrying:
    """instructor re-asks on validation errors; a reply without the function call (text, or
    a MALFORMED_FUNCTION_CALL candidate) fails instructor's asserts instead, so retry those too.
    A reply with no candidates at all is not re-asked: the chain moves to the next model."""
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    reaskable = (ValidationError, ValueError, AssertionError)
    return AsyncRetrying(
        stop=stop_after_attempt(max(max_retries, 0) + 1),
        retry=retry_if_exception(lambda exc: isinstance(exc, reaskable) and not got_empty()),
        reraise=True,
    )


# finish reasons that end a reply normally, or that a re-ask can fix (a malformed call)
_FINE = {"STOP", "FINISH_REASON_UNSPECIFIED", "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL"}


def _name(value: Any) -> str:
    """An enum of google-genai (or the raw string of a newer API value) as its wire name."""
    return str(getattr(value, "value", value) or "")


def gemini_stop_problem(response: Any) -> str | None:
    """Why a response or stream chunk is not (the end of) a whole answer, or None."""
    feedback = getattr(response, "prompt_feedback", None)
    if feedback is not None and getattr(feedback, "block_reason", None):
        return f"blocked the prompt (promptFeedback.blockReason {_name(feedback.block_reason)})"
    for candidate in getattr(response, "candidates", None) or []:
        reason = _name(getattr(candidate, "finish_reason", None))
        if not reason or reason in _FINE:
            continue
        if reason == "MAX_TOKENS":
            return "cut the answer off at the output token limit (finishReason MAX_TOKENS)"
        return f"stopped the answer (finishReason {reason})"
    return None


def gemini_tokens(response: Any) -> tuple[int, int]:
    meta = getattr(response, "usage_metadata", None)
    if meta is None:
        return 0, 0
    return int(meta.prompt_token_count or 0), int(meta.candidates_token_count or 0)


class GeminiProvider(ProviderPlugin):
    name = "gemini"
    label = "Google Gemini"
    key_env = "GEMINI_API_KEY"
    key_env_alternatives = ("GOOGLE_API_KEY",)
    base_url_env = "GOOGLE_GEMINI_BASE_URL"
    default_models = {"agent": "gemini-2.5-flash", "router": "gemini-2.5-flash-lite"}
    default_rank = {"agent": 20, "router": 30}

    def __init__(self, *, api_key: str | None = None, base_url: str | None = None,
                 backoff: Backoff | None = None):
        self.backoff = backoff or Backoff.from_settings()
        self._api_key = api_key or os.environ.get("GEMINI_API_KEY") or os.environ.get("GOOGLE_API_KEY")
        if not self._api_key:
            raise ProviderNotConfigured(
                "Gemini is not configured: set GEMINI_API_KEY (or GOOGLE_API_KEY)", provider="gemini")
        self._base_url = base_url or os.environ.get("GOOGLE_GEMINI_BASE_URL") or None
        self._clients: dict[float, instructor.AsyncInstructor] = {}
        self._stream_clients: dict[float, instructor.AsyncInstructor] = {}
        self._sdk_clients: list[genai.Client] = []

    async def aclose(self) -> None:
        """Close the SDK's HTTP sessions (one client per timeout)."""
        for client in self._sdk_clients:
            await client.aio.aclose()
        self._sdk_clients.clear()
        self._clients.clear()
        self._stream_clients.clear()

    def _stream_client(self, timeout: float) -> instructor.AsyncInstructor:
        """instructor in JSON mode over `generate_content_stream`, with the stream's usage tapped."""
        import instructor

        if timeout not in self._stream_clients:
            sdk = self._client(timeout).client

            async def create(*args: Any, model: str, stream: bool = True, **kwargs: Any) -> Any:
                return tap(await sdk.aio.models.generate_content_stream(model=model, **kwargs))

            mode, provider = instructor.Mode.JSON, instructor.Provider.GENAI
            self._stream_clients[timeout] = instructor.AsyncInstructor(
                client=sdk, create=instructor.patch(create=create, mode=mode, provider=provider),
                mode=mode, provider=provider)
        return self._stream_clients[timeout]

    def _client(self, timeout: float) -> instructor.AsyncInstructor:
        import instructor
        from google import genai
        from google.genai import types

        if timeout not in self._clients:
            options = types.HttpOptions(
                base_url=self._base_url,
                api_version="v1beta",
                timeout=max(1, int(timeout * 1000)),  # milliseconds
                retry_options=types.HttpRetryOptions(attempts=1),  # retry.structured_call retries
            )
            client = genai.Client(api_key=self._api_key, http_options=options)
            self._sdk_clients.append(client)
            self._clients[timeout] = instructor.from_genai(client, mode=instructor.Mode.TOOLS, use_async=True)
        return self._clients[timeout]

    async def complete(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]:
        system, contents = to_gemini_contents(messages)
        client = self._client(timeout)
        safe_model = _gemini_model(response_model)

        async def call(hooks):
            empty: list[bool] = []
            problems: list[str] = []

            def seen(response: Any) -> None:
                empty.append(not getattr(response, "candidates", True))
                if problem := gemini_stop_problem(response):
                    problems.append(problem)

            hooks.on("completion:response", seen)
            try:
                output, raw = await client.create_with_completion(
                    messages=contents,
                    **({"system": system} if system else {}),
                    response_model=safe_model,
                    model=model,
                    max_retries=_reask_policy(max_retries, lambda: any(empty) or bool(problems)),
                    hooks=hooks,
                )
            except Exception as exc:
                if problems:
                    raise ModelStopped(self.name, problems[-1]) from exc
                raise
            return response_model.model_validate(dict(output)), raw

        return await structured_call(provider=self.name, model=model, max_retries=max_retries,
                                     timeout=timeout, call=call, tokens_of=gemini_tokens, key_env=self.key_env,
                                     backoff=self.backoff, retryable=self.retryable)

    async def stream(
        self,
        messages: list[ChatMessage],
        response_model: type[T],
        *,
        model: str,
        on_partial: PartialFn,
        max_retries: int = 2,
        timeout: float = 30.0,
    ) -> Completion[T]:
        """`complete`, streamed (JSON mode): partial outputs for `on_partial` as text arrives."""
        system, contents = to_gemini_contents(messages)
        client = self._stream_client(timeout)
        safe_model = _gemini_model(response_model)

        def open_stream():
            return client.create_partial(
                messages=contents, **({"system": system} if system else {}),
                response_model=safe_model, model=model, max_retries=0)

        return await streamed_call(provider=self.name, model=model, max_retries=max_retries, timeout=timeout,
                                   open_stream=open_stream, response_model=response_model, on_partial=on_partial,
                                   tokens_of=gemini_tokens, stop_of=gemini_stop_problem, key_env=self.key_env,
                                   backoff=self.backoff, retryable=self.retryable)


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(GeminiProvider)
