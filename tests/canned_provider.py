"""A third party's model provider, as a plug-in package would ship it: one module with a
`ProviderPlugin` class and `register(r)`, found through an entry point and nothing in agent/.

It answers an agent step with a fixed final answer, as if a model had written it; any other
structured request (the router's) fails like an unavailable model."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import Completion, PartialFn, ProviderError, ProviderNotConfigured, ProviderPlugin, Usage

T = TypeVar("T", bound=BaseModel)

ANSWER = "Canned: a family of 4 qualifies up to the income limit in the chart [1]."


class CannedProvider(ProviderPlugin):
    name = "canned"
    label = "Canned (a test plug-in)"
    key_env = "CANNED_API_KEY"
    default_models = {"agent": "canned-1"}
    default_rank = {"agent": 5}  # before OpenAI: a plug-in can be the default

    calls: list[str] = []  # the models asked, across instances

    def __init__(self, *, backoff: object = None) -> None:
        import os

        if not os.environ.get(self.key_env):
            raise ProviderNotConfigured(f"Canned is not configured: set {self.key_env}", provider=self.name)

    async def complete(self, messages: list[ChatMessage], response_model: type[T], *, model: str,
                       max_retries: int = 2, timeout: float = 30.0) -> Completion[T]:
        CannedProvider.calls.append(model)
        if "step" not in response_model.model_fields:
            raise ProviderError("canned answers agent steps only", provider=self.name, retryable=False)
        output = response_model.model_validate({"step": {"kind": "final_answer", "answer": ANSWER,
                                                         "references": [], "confidence": 0.9}})
        return Completion(output=output, usage=Usage(provider=self.name, model=model, input_tokens=1, output_tokens=1))

    async def stream(self, messages: list[ChatMessage], response_model: type[T], *, model: str,
                     on_partial: PartialFn, max_retries: int = 2, timeout: float = 30.0) -> Completion[T]:
        completion = await self.complete(messages, response_model, model=model)
        await on_partial(completion.output)
        return completion


def register(r) -> None:  # noqa: ANN001 - agent.plugins.Registrar
    r.provider(CannedProvider)
