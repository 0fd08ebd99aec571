"""The agent loop: structured steps through instructor, tools in parallel, a turn cap.

Reads like openai-agents-python's Runner: one small state dataclass and a short while loop.
Each model call returns a typed step (agent/turn/steps.py: tool calls or a final answer);
processing it gives the typed next step, `FinalOutput` or `RunAgain`, and a turn counter is
checked before every model call. Prefetched tool results (the router's search) are in the
first prompt, so a plain knowledge answer needs a single agent call.

A model's mistakes get one correction, like the Runner's ModelBehaviorError but answered once
first: a step calling an unknown tool or passing arguments the tool's schema rejects gets tool
results saying what was wrong and which tools and arguments exist (the step's good calls run).
A second such step raises `ModelBehaviorError`, the turn cap `MaxTurnsExceeded`; both are
`ProviderError`s, so the turn answers with the search results and their sources, as on every
other model fault (agent/turn/degrade.py): a bad tool call never loses the search.

Streaming: with an `AnswerText` whose sink is set, each step is streamed and the final
answer's text reaches the sink as the model writes it (tool-call steps show nothing); the
same call, so a streamed answer costs no extra model call. `<document>` blocks are numbered
turn-wide and `[n]` markers resolved through agent.turn.citations, streamed or not.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from agent.capabilities.base import Found
from agent.messages import ChatMessage
from agent.prompts import PromptSet
from agent.providers.base import Model, ProviderError
from agent.references import Reference
from agent.turn.steps import AgentStep, Citation, FinalAnswer, ToolCall, ToolCalls
from agent.tools.base import ToolRegistry, ToolResult
from agent.tracing import NOOP, Span
from agent.turn.answer_stream import AnswerText
from agent.turn.citations import Citations
from agent.turn.state import ProgressFn


log = logging.getLogger("askdesk.agent")


class ModelBehaviorError(ProviderError):
    """The model called an unknown tool or passed invalid arguments again after being told
    once what exists. Its message says how many, never the model's text (it is logged)."""


class MaxTurnsExceeded(ProviderError):
    """The turn cap (ASKDESK_MAX_ITERATIONS) came before a final answer."""


@dataclass
class RunState:
    messages: list[ChatMessage]
    turn: int = 0
    corrected: bool = False  # the model was told once about tool calls it got wrong
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
    tool_seconds: float = 0.0
    pending: list[ToolCall] = field(default_factory=list)  # calls that change something: the asker confirms first


@dataclass
class FinalOutput:
    """The model answered: the run is over."""

    result: LoopResult


@dataclass
class RunAgain:
    """Tool results (or the errors of calls to correct) are in the conversation: call the model again."""


NextStep = FinalOutput | RunAgain


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


async def _run_tool(registry: ToolRegistry, call: ToolCall, problem: str | None, span: Span) -> ToolResult:
    """The call's result; a call the model got wrong does not run, its error goes back instead."""
    if problem is not None:
        return ToolResult(text=f"ERROR: {problem}")
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
    """Run steps until a final answer. Raises a ProviderError when no answer comes: the
    model's (the turn's ledger has counted every call, see agent/turn/state.py), a second step
    of tool calls to correct (`ModelBehaviorError`), or the turn cap (`MaxTurnsExceeded`).

    `found`: what the route's capability found before the first model call (in the prompt).
    `tool_specs`: the registry's schemas computed once by the caller (pydantic's JSON-schema
    generation is the most expensive step of a turn outside the model).
    `answer`: where the answer text goes (streamed token by token when its sink is set)."""
    answer = answer or AnswerText(None, Citations())
    system = prompts.render(
        "agent",
        domain=domain,
        tools=tool_specs if tool_specs is not None else registry.describe(),
        prefetched=bool(found),
        weak_evidence=any(f.result.weak_evidence for f in found),
        max_iterations=max_iterations,
    )
    state = RunState(messages=[ChatMessage(role="system", content=system), *history,
                               *found_messages(found, answer.citations), ChatMessage(role="user", content=question)])
    for f in found:
        _absorb(state, f.tool, f.result)

    while True:
        if state.turn >= max_iterations:
            raise MaxTurnsExceeded(f"no final answer within {max_iterations} agent steps")
        state.turn += 1
        step = await _model_step(model, state, prompts, max_iterations, answer, span)
        if isinstance(step, FinalAnswer):
            next_step: NextStep = FinalOutput(await _final(step, state, answer))
        else:
            next_step = await _run_tools(step, state, registry, answer.citations, progress, span)
        if isinstance(next_step, FinalOutput):
            return next_step.result


async def _model_step(model: Model, state: RunState, prompts: PromptSet, max_iterations: int,
                      answer: AnswerText, span: Span) -> ToolCalls | FinalAnswer:
    """One model call (streamed when the answer has a sink); its failure propagates."""
    messages = state.messages
    if state.turn == max_iterations and state.turn > 1:
        # the cap is next: ask for the answer instead of another round of tools
        messages = [*messages, ChatMessage(role="user", content=prompts.render("last_step"))]

    async def interrupted(error: Exception, more: bool) -> None:
        if more:  # the last model's failure is the caller's to report
            await answer.note(prompts.render("answer_interrupted"))

    child = span.child(f"agent model #{state.turn}", "llm", {"messages": [m.model_dump() for m in messages]})
    try:
        if answer.sink is not None:
            completion = await model.stream(messages, AgentStep, on_partial=answer.on_partial,
                                            on_interrupt=interrupted)
        else:
            completion = await model.complete(messages, AgentStep)
    except Exception as exc:
        child.end(error=str(exc))
        raise
    step = completion.output.step
    child.end({"kind": step.kind, "step": step.model_dump(), "usage": completion.usage.model_dump()})
    return step


async def _final(step: FinalAnswer, state: RunState, answer: AnswerText) -> LoopResult:
    text = await answer.finish(step.answer)
    return LoopResult(
        answer=text,
        references=list(answer.citations.cited) or resolve_references(step.references, state.references),
        confidence=step.confidence,
        tool_calls=state.tool_calls,
        data=state.data,
        tool_seconds=state.tool_seconds,
    )


async def _run_tools(step: ToolCalls, state: RunState, registry: ToolRegistry, citations: Citations,
                     progress: ProgressFn | None, span: Span) -> NextStep:
    """Run the step's calls in parallel and put their results in the conversation. Calls the
    model got wrong (unknown tool, invalid arguments) are told once what exists; a second step
    with such calls ends the run (`ModelBehaviorError`). A step calling a tool that changes
    something runs nothing: the run ends with those calls for the asker to confirm."""
    problems = [registry.problem(call.name, call.arguments) for call in step.calls]
    pending = [c for c, problem in zip(step.calls, problems) if problem is None and registry.changes(c.name)]
    if pending:
        return FinalOutput(LoopResult(answer="", references=[], confidence=None, tool_calls=state.tool_calls,
                                      data=state.data, tool_seconds=state.tool_seconds, pending=pending))
    wrong = sum(problem is not None for problem in problems)
    if wrong:
        if state.corrected:
            raise ModelBehaviorError(f"agent step {state.turn}: {wrong} of {len(step.calls)} tool call(s) "
                                     "named an unknown tool or had invalid arguments, after one correction",
                                     retryable=False)
        state.corrected = True
        log.info("agent step %d: %d of %d tool call(s) named an unknown tool or had invalid arguments; "
                 "the model is told once", state.turn, wrong, len(step.calls))
    await _announce(registry, [c for c, problem in zip(step.calls, problems) if problem is None], progress)
    started = time.perf_counter()
    results = await asyncio.gather(*(_run_tool(registry, call, problem, span)
                                     for call, problem in zip(step.calls, problems)))
    state.tool_seconds += time.perf_counter() - started
    state.messages.append(ChatMessage(
        role="assistant",
        content=json.dumps({"tool_calls": [c.model_dump() for c in step.calls]}, ensure_ascii=False),
    ))
    for call, problem, result in zip(step.calls, problems, results):
        if problem is None:
            _absorb(state, call.name, result)
        state.messages.append(ChatMessage(role="tool", name=call.name,
                                          content=citations.number(result.text, result.documents)))
    return RunAgain()


async def _announce(registry: ToolRegistry, calls: list[ToolCall], progress: ProgressFn | None) -> None:
    if progress is None:
        return
    seen: list[str] = []
    for call in calls:
        tool = registry.tools.get(call.name)
        if tool is not None and tool.progress not in seen:
            seen.append(tool.progress)
    for line in seen:
        await progress(line)
