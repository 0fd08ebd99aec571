"""Models whose answers come from Python: for tests, benchmarks and offline runs.

Shipped with the package (like pydantic-ai's `models/function.py`) so tests and benchmarks
share one fake instead of each writing its own. Both implement `Model`:

- `FunctionModel(fn)`: `fn(messages, response_model)` returns (or awaits) the output, as a
  `response_model` instance or a dict it validates; an exception it raises (or returns)
  is raised by `complete`, so a `ProviderError` tests a provider failure.
- `ScriptedModel(*replies)`: the replies in order, one per call; `assert_done()` fails
  when some were never asked for, and a call past the script fails the test.

Both record every call (`calls`: the messages, the response model and the usage), so a
test can check what the model was shown.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import Completion, Model, Usage

T = TypeVar("T", bound=BaseModel)

Reply = BaseModel | dict[str, Any] | BaseException
ModelFunction = Callable[[list[ChatMessage], type[BaseModel]], Reply | Awaitable[Reply]]


@dataclass
class ModelCall:
    messages: list[ChatMessage]
    response_model: type[BaseModel]
    usage: Usage | None = None  # set when the call answered


class FunctionModel(Model):
    """A `Model` answering with `fn(messages, response_model)`; usage counts ~4 chars a token."""

    def __init__(self, fn: ModelFunction, *, name: str = "function") -> None:
        self.fn = fn
        self.name = name
        self.calls: list[ModelCall] = []

    async def complete(self, messages: list[ChatMessage], response_model: type[T]) -> Completion[T]:
        started = time.perf_counter()
        call = ModelCall(list(messages), response_model)
        self.calls.append(call)
        reply = self.fn(messages, response_model)
        if inspect.isawaitable(reply):
            reply = await reply
        if isinstance(reply, BaseException):
            raise reply
        output = reply if isinstance(reply, response_model) else response_model.model_validate(reply)
        usage = Usage(provider="function", model=self.name,
                      input_tokens=sum(len(m.content) for m in messages) // 4,
                      output_tokens=len(output.model_dump_json()) // 4,
                      latency_ms=(time.perf_counter() - started) * 1000)
        call.usage = usage
        return Completion(output=output, usage=usage)


class ScriptedModel(FunctionModel):
    """A `Model` that gives `replies` in order (dicts, models or exceptions to raise)."""

    def __init__(self, *replies: Reply, name: str = "scripted") -> None:
        self.replies = list(replies)
        super().__init__(self._next, name=name)

    def _next(self, messages: list[ChatMessage], response_model: type[BaseModel]) -> Reply:
        if not self.replies:
            raise AssertionError(f"model called more often than scripted ({len(self.calls)} calls)")
        return self.replies.pop(0)

    def assert_done(self) -> None:
        assert not self.replies, f"unused scripted replies: {self.replies}"
