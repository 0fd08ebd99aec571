"""A model provider: `echo/<model>` answers every question with the question itself, without a
key or a network. Built on askdesk's FunctionModel (agent/providers/function.py), the test
model, for its one job: make an agent answer so a surface can be tried end to end."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from agent.providers.base import Completion, ProviderError, ProviderPlugin
from agent.providers.function import FunctionModel

if TYPE_CHECKING:
    from agent.config import Settings
    from agent.messages import ChatMessage
    from agent.providers.base import PartialFn, Provider
    from agent.providers.retry import Backoff

T = TypeVar("T", bound=BaseModel)


def echo(model: str):
    """The agent's final answer: "<model>: <the last user message>", citing the first document
    it was given ("[1]"), if any, so its answers show sources like a real model's."""
    def reply(messages: list["ChatMessage"], response_model: type[BaseModel]) -> Any:
        if "step" not in response_model.model_fields:
            return ProviderError("echo answers agent steps only", provider="echo", retryable=False)
        asked = next((m.content for m in reversed(messages) if m.role == "user"), "")
        cites = any(m.role == "tool" and '<document index="1"' in m.content for m in messages)
        answer = f"{model}: {asked}" + (" [1]" if cites else "")
        return {"step": {"kind": "final_answer", "answer": answer, "references": [], "confidence": 1.0}}

    return reply


class EchoProvider(ProviderPlugin):
    name = "echo"
    label = "Echo"
    key_required = False

    @classmethod
    def build(cls, settings: "Settings | None", backoff: "Backoff") -> "Provider":
        return cls()  # type: ignore[return-value]

    async def complete(self, messages: list["ChatMessage"], response_model: type[T], *, model: str,
                       max_retries: int = 2, timeout: float = 30.0) -> Completion[T]:
        completion = await FunctionModel(echo(model), name=model).complete(messages, response_model)
        usage = completion.usage.model_copy(update={"provider": self.name})
        return Completion(output=completion.output, usage=usage)

    async def stream(self, messages: list["ChatMessage"], response_model: type[T], *, model: str,
                     on_partial: "PartialFn", max_retries: int = 2, timeout: float = 30.0) -> Completion[T]:
        completion = await self.complete(messages, response_model, model=model)
        await on_partial(completion.output)
        return completion
