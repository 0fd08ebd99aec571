"""The agent loop with the package's ScriptedModel and in-test tools (no KB, no HTTP).

The provider end of the loop is covered through the real SDKs in test_agent_service.py;
here the loop's own rules: tool results go back, parallel calls really overlap, errors are
fed back as text, the turn cap holds, citations are mapped to retrieved references only.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from agent.capabilities.base import Found
from agent.messages import ChatMessage
from agent.prompts import default_prompts
from agent.providers.base import ProviderError, Usage
from agent.providers.function import ScriptedModel
from agent.references import Reference
from agent.tools.base import Tool, ToolRegistry, ToolResult
from agent.turn.loop import MaxTurnsExceeded, resolve_references, run_agent
from agent.turn.state import CountedModel, Ledger
from agent.turn.steps import AgentStep, Citation
from tests.fakes.steps import tool_calls


def final(answer: str, refs: list[dict] | None = None, confidence: float = 0.8) -> dict:
    from tests.fakes.steps import final as final_step

    return final_step(answer, refs=refs or [], confidence=confidence)


def seen(model: ScriptedModel) -> list[list[ChatMessage]]:
    """The messages of every call the model got."""
    return [call.messages for call in model.calls]


class LookupArgs(BaseModel):
    query: str


def make_registry(log: list[str] | None = None, *, barrier: asyncio.Barrier | None = None) -> ToolRegistry:
    async def lookup(args: LookupArgs) -> ToolResult:
        """Look something up."""
        if log is not None:
            log.append(f"start {args.query}")
        if barrier is not None:
            await asyncio.wait_for(barrier.wait(), timeout=2)  # only passes if the calls overlap
        if log is not None:
            log.append(f"end {args.query}")
        return ToolResult(text=f"RESULT for {args.query}",
                          references=[Reference(source=f"{args.query}.md", section="S1", title=args.query)])

    async def broken(args: LookupArgs) -> ToolResult:
        """Always fails."""
        raise RuntimeError("backend exploded")

    registry = ToolRegistry()
    registry.register(Tool(name="lookup", args_model=LookupArgs, fn=lookup, progress="Looking up…"))
    registry.register(Tool(name="broken", args_model=LookupArgs, fn=broken))
    return registry


async def run(model, registry, *, found=(), max_iterations=3, progress=None, history=()):
    return await run_agent(model=model, registry=registry, prompts=default_prompts(), question="q?",
                           history=list(history), found=list(found), max_iterations=max_iterations,
                           domain="test", progress=progress)


async def test_tool_call_result_goes_back_then_final_answer():
    model = ScriptedModel(tool_calls(("lookup", {"query": "alpha"})),
                          final("Alpha it is.", [{"source": "alpha.md", "section": "S1"}]))
    lines: list[str] = []

    async def progress(line: str) -> None:
        lines.append(line)

    result = await run(model, make_registry(), progress=progress)
    model.assert_done()
    assert result.answer == "Alpha it is."
    assert [r.source for r in result.references] == ["alpha.md"]
    assert result.tool_calls == ["lookup"]
    assert lines == ["Looking up…"]
    second_call = seen(model)[1]
    assert second_call[-1].role == "tool" and second_call[-1].name == "lookup"
    assert "RESULT for alpha" in second_call[-1].content
    assert second_call[-2].role == "assistant" and '"lookup"' in second_call[-2].content


async def test_prefetched_result_is_in_the_first_prompt_and_answer_needs_one_call():
    pre = Found("knowledge", "get_formatted_context", {"query": "q"},
                ToolResult(text="<document source=\"kb.md\">PREFETCHED FACT</document>",
                           references=[Reference(source="kb.md", section="Intro")]))
    model = ScriptedModel(final("From the docs.", [{"source": "kb.md", "section": "Intro"}]))
    result = await run(model, make_registry(), found=[pre])
    model.assert_done()
    assert len(model.calls) == 1
    system, tool, question = seen(model)[0]
    # the prefetch is quoted data before the question, not part of the system prompt
    assert "PREFETCHED FACT" not in system.content and "already retrieved" in system.content
    assert tool.role == "tool" and "PREFETCHED FACT" in tool.content and question.role == "user"
    assert result.references == [Reference(source="kb.md", section="Intro")]
    assert result.tool_calls == ["get_formatted_context"]


async def test_parallel_tool_calls_overlap():
    log: list[str] = []
    barrier = asyncio.Barrier(2)  # deadlocks (times out) if the two calls ran one after the other
    model = ScriptedModel(tool_calls(("lookup", {"query": "a"}), ("lookup", {"query": "b"})), final("done"))
    result = await run(model, make_registry(log, barrier=barrier))
    model.assert_done()
    assert log[:2] == ["start a", "start b"]
    tool_messages = [m for m in seen(model)[1] if m.role == "tool"]
    assert [m.content for m in tool_messages] == ["RESULT for a", "RESULT for b"]
    assert result.tool_calls == ["lookup", "lookup"]


async def test_tool_errors_are_fed_back_as_text():
    model = ScriptedModel(
        tool_calls(("nope", {}), ("lookup", {"wrong": 1}), ("broken", {"query": "x"})),
        final("Sorry, the tools failed."),
    )
    result = await run(model, make_registry())
    model.assert_done()
    texts = [m.content for m in seen(model)[1] if m.role == "tool"]
    assert texts[0].startswith("ERROR: Unknown tool 'nope'") and "lookup" in texts[0]
    assert texts[1].startswith("ERROR: invalid arguments for lookup") and "query" in texts[1]
    assert texts[2].startswith("ERROR: tool broken failed") and "backend exploded" in texts[2]
    assert result.answer == "Sorry, the tools failed."


async def test_iteration_cap_ends_the_run_as_a_model_fault():
    """The turn answers with the search results then (tests/test_bad_tool_calls.py)."""
    model = ScriptedModel(tool_calls(("lookup", {"query": "a"})), tool_calls(("lookup", {"query": "b"})))
    with pytest.raises(MaxTurnsExceeded):
        await run(model, make_registry(), max_iterations=2)
    model.assert_done()  # exactly two model calls, no third
    last_prompt = seen(model)[-1][-1].content
    assert last_prompt == default_prompts().render("last_step")  # the last step asked for an answer
    assert "last step" not in seen(model)[0][-1].content


async def test_a_provider_failure_leaves_every_model_call_of_the_run_in_the_ledger():
    failed = Usage(provider="openai", model="m", error="HTTP 503")
    model = ScriptedModel(tool_calls(("lookup", {"query": "a"})), ProviderError("HTTP 503", attempts=[failed]))
    ledger = Ledger()
    with pytest.raises(ProviderError):
        await run(CountedModel(model, ledger), make_registry())
    assert ledger.usages == [model.calls[0].usage, failed]  # the turn's llm_calls counts both


async def test_a_call_cut_off_by_the_deadline_is_counted():
    async def hang(messages, response_model):
        await asyncio.sleep(10)

    from agent.providers.function import FunctionModel

    ledger = Ledger()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await run(CountedModel(FunctionModel(hang), ledger), make_registry())
    assert len(ledger) == 1 and "deadline" in ledger.usages[0].error


async def test_history_is_sent_between_system_and_question():
    history = [ChatMessage(role="user", content="earlier question"), ChatMessage(role="assistant", content="earlier answer")]
    model = ScriptedModel(final("ok"))
    await run(model, make_registry(), history=history)
    sent = seen(model)[0]
    assert [m.role for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1].content == "earlier question" and sent[-1].content == "q?"


def test_invented_citations_are_dropped():
    retrieved = [Reference(source="a.md", section="One"), Reference(source="a.md", section="Two"),
                 Reference(source="b.md", section="")]
    refs = resolve_references(
        [Citation(source="a.md", section="Two"), Citation(source="invented.md"), Citation(source="b.md", section="x"),
         Citation(source="a.md", section="Two")],
        retrieved,
    )
    assert refs == [retrieved[1], retrieved[2]]


@pytest.mark.parametrize("arguments", ['{"query": "a"}', {"query": "a"}])
def test_tool_call_arguments_accept_json_text_or_object(arguments):
    step = AgentStep.model_validate({"step": {"kind": "tool_calls", "calls": [{"name": "lookup", "arguments": arguments}]}})
    assert step.step.calls[0].arguments == {"query": "a"}
