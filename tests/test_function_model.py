"""The test model shipped with the package: what FunctionModel and ScriptedModel promise."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from agent.messages import ChatMessage
from agent.providers.base import Model, ProviderError
from agent.providers.function import FunctionModel, ScriptedModel

ASK = [ChatMessage(role="user", content="How many?")]


class Count(BaseModel):
    n: int


async def test_function_model_validates_what_the_function_returns_and_records_the_call():
    async def count(messages, response_model):
        return {"n": len(messages[-1].content)}

    model = FunctionModel(count, name="counter")
    assert isinstance(model, Model)
    completion = await model.complete(ASK, Count)
    assert completion.output == Count(n=9)
    assert completion.attempts == [completion.usage] and completion.usage.model == "counter"
    assert model.calls[0].messages == ASK and model.calls[0].response_model is Count
    assert model.calls[0].usage == completion.usage


async def test_an_exception_from_the_function_is_raised():
    model = FunctionModel(lambda messages, response_model: ProviderError("HTTP 503", provider="fake"))
    with pytest.raises(ProviderError, match="HTTP 503"):
        await model.complete(ASK, Count)


async def test_scripted_model_answers_in_order_and_knows_when_it_was_not_fully_used():
    model = ScriptedModel({"n": 1}, Count(n=2), {"n": 3})
    assert (await model.complete(ASK, Count)).output.n == 1
    assert (await model.complete(ASK, Count)).output.n == 2
    with pytest.raises(AssertionError, match="unused scripted replies"):
        model.assert_done()
    await model.complete(ASK, Count)
    model.assert_done()
    with pytest.raises(AssertionError, match="more often than scripted"):
        await model.complete(ASK, Count)
