"""The agent loop: structured steps through instructor, tools in parallel, a turn cap.

Reads like the first openai-agents-python Runner: one small state dataclass, a while loop
over tagged step results (tool calls / final answer), and a turn counter checked before
every model call. Prefetched tool results (the router's search) are in the first prompt,
so a plain knowledge answer needs a single agent call.

Streaming: with an `AnswerText` whose sink is set, each step is streamed and the final
answer's text reaches the sink as the model writes it (tool-call steps show nothing); the
same call, so a streamed answer costs no extra model call. `<document>` blocks are numbered
turn-wide and `[n]` markers resolved through agent.turn.citations, streamed or not.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from agent.capabilities.base import Found
from agent.messages import ChatMessage
from agent.prompts import PromptSet
from agent.providers.base import Model
from agent.references import Reference
from agent.turn.steps import AgentStep, Citation, FinalAnswer, ToolCall, ToolCalls
from agent.tools.base import ToolRegistry, ToolResult
from agent.tracing import NOOP, Span
from agent.turn.answer_stream import AnswerText
from agent.turn.citations import Citations
from agent.turn.state import ProgressFn


@dataclass
class RunState:
    messages: list[ChatMessage]
    turn: int = 0
    tool_calls: list[str] = field(default_factory=list)
    references: list[Reference] = field(default_factory=list)  # everything tools returned, in order
    data: dict[str, list[Any]] = field(default_factory=dict)  # tool name -> what each call found
    tool_seconds: float = 0.0


@dataclass
class LoopResult:
    answer: str
    references: list[Reference]
    confidence: float | None
    tool_calls: list[str]
    data: dict[str, list[Any]]
    hit_cap: bool = False
    tool_seconds: float = 0.0


def resolve_references(citations: list[Citation], retrieved: list[Reference]) -> list[Reference]:
    """Map the model's citations to references a tool really returned; drop invented ones."""
    out: list[Reference] = []
    for citation in citations:
        source = citation.source.strip()
        same_source = [r for r in retrieved if r.source == source or r.source.rsplit("/", 1)[-1] == source.rsplit("/", 1)[-1]]
        if not same_source:
            continue
        match = next((r for r in same_source if citation.section and r.section == citation.section.strip()), None)
        match = match or same_source[0]
        if match not in out:
            out.append(match)
    return out


def _absorb(state: RunState, name: str, result: ToolResult) -> None:
    """Keep what a tool found: its references (for citations) and data (for surfaces)."""
    state.tool_calls.append(name)
    for ref in result.references:
        if all((r.source, r.section) != (ref.source, ref.section) for r in state.references):
            state.references.append(ref)
    if result.data is not None:
        state.data.setdefault(name, []).append(result.data)


async def _run_tool(registry: ToolRegistry, call: ToolCall, span: Span) -> ToolResult:
    child = span.child(f"tool:{call.name}", "tool", {"arguments": call.arguments})
    result = await registry.run(call.name, call.arguments)
    child.end({"text": result.text, "references": len(result.references), "weak_evidence": result.weak_evidence})
    return result


def found_messages(found: list[Found], citations: Citations | None = None) -> list[ChatMessage]:
    """What was found before the first model call, as tool results: quoted data in the
    conversation (agent/fencing.py), never part of the system prompt's instructions."""
    citations = citations or Citations()
    return [ChatMessage(role="tool", name=f.tool, content=citations.number(f.result.text, f.result.documents))
            for f in found]


async def run_agent(
    *,
    model: Model,
    registry: ToolRegistry,
    prompts: PromptSet,
    question: str,
    history: list[ChatMessage],
    found: list[Found],
    max_iterations: int,
    domain: str,
    progress: ProgressFn | None = None,
    span: Span = NOOP,
    tool_specs: list[dict[str, Any]] | None = None,
    answer: AnswerText | None = None,
) -> LoopResult:
    """Run steps until a final answer or the turn cap; a ProviderError propagates to the turn
    (the turn's ledger has counted every call, see agent/turn/state.py).

    `found`: what the route's capability found before the first model call (in the prompt).
    `tool_specs`: the registry's schemas computed once by the caller (pydantic's JSON-schema
    generation is the most expensive step of a turn outside the model).
    `answer`: where the answer text goes (streamed token by token when its sink is set)."""
    answer = answer or AnswerText(None, Citations())
    citations = answer.citations
    streaming = answer.sink is not None

    async def interrupted(error: Exception, more: bool) -> None:
        if more:  # the last model's failure is the caller's to report
            await answer.note(prompts.render("answer_interrupted"))

    system = prompts.render(
        "agent",
        domain=domain,
        tools=tool_specs if tool_specs is not None else registry.describe(),
        prefetched=bool(found),
        weak_evidence=any(f.result.weak_evidence for f in found),
        max_iterations=max_iterations,
    )
    state = RunState(messages=[ChatMessage(role="system", content=system), *history,
                               *found_messages(found, citations), ChatMessage(role="user", content=question)])
    for f in found:
        _absorb(state, f.tool, f.result)

    while True:
        if state.turn >= max_iterations:
            return _capped(state, await answer.end_with(prompts.render("iteration_cap")))
        state.turn += 1
        messages = state.messages
        if state.turn == max_iterations and state.turn > 1:
            # the cap is next: ask for the answer instead of another round of tools
            messages = [*messages, ChatMessage(role="user", content=prompts.render("last_step"))]
        child = span.child(f"agent model #{state.turn}", "llm", {"messages": [m.model_dump() for m in messages]})
        try:
            if streaming:
                completion = await model.stream(messages, AgentStep, on_partial=answer.on_partial,
                                                on_interrupt=interrupted)
            else:
                completion = await model.complete(messages, AgentStep)
        except Exception as exc:
            child.end(error=str(exc))
            raise
        step = completion.output.step
        child.end({"kind": step.kind, "step": step.model_dump(), "usage": completion.usage.model_dump()})

        if isinstance(step, FinalAnswer):
            text = await answer.finish(step.answer)
            return LoopResult(
                answer=text,
                references=list(citations.cited) or resolve_references(step.references, state.references),
                confidence=step.confidence,
                tool_calls=state.tool_calls,
                data=state.data,
                tool_seconds=state.tool_seconds,
            )

        assert isinstance(step, ToolCalls)
        await _announce(registry, step, progress)
        started = time.perf_counter()
        results = await asyncio.gather(*(_run_tool(registry, call, span) for call in step.calls))
        state.tool_seconds += time.perf_counter() - started
        state.messages.append(ChatMessage(
            role="assistant",
            content=json.dumps({"tool_calls": [c.model_dump() for c in step.calls]}, ensure_ascii=False),
        ))
        for call, result in zip(step.calls, results):
            _absorb(state, call.name, result)
            state.messages.append(ChatMessage(role="tool", name=call.name,
                                              content=citations.number(result.text, result.documents)))


async def _announce(registry: ToolRegistry, step: ToolCalls, progress: ProgressFn | None) -> None:
    if progress is None:
        return
    seen: list[str] = []
    for call in step.calls:
        tool = registry.tools.get(call.name)
        if tool is not None and tool.progress not in seen:
            seen.append(tool.progress)
    for line in seen:
        await progress(line)


def _capped(state: RunState, text: str) -> LoopResult:
    """The cap ended the run without a final answer: say so, and keep what was found."""
    return LoopResult(
        answer=text,
        references=state.references[:5],
        confidence=None,
        tool_calls=state.tool_calls,
        data=state.data,
        hit_cap=True,
        tool_seconds=state.tool_seconds,
    )

