"""The stages of one turn, in order. Each reads and writes the `Turn` (agent/turn/state.py):

    check -> attach -> recall -> read -> classify -> retrieve -> respond

check: an empty or too long message gets a note. attach: the files that came with the question
(agent/turn/files.py). recall: the thread's history. read: what the
wording alone says. classify: the route (the gate and the router model read what the turn's
retrieval found for the message). retrieve: what the route's capability finds before the first
model call. respond: the agent loop over every capability's tools, or the capability's
search-only answer without a model, or the turn's own reply (refusal, greeting, clarifying
question). A stage that finds `turn.result` set has nothing to do. The service wraps the stages
in the turn's deadline, the apology and remembering; a benchmark passes its own stage tuple.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from agent.answers import AnswerResult
from agent.capabilities.base import Found
from agent.deadline import ROUTER_SHARE, deadline, remaining
from agent.providers.base import ProviderError
from agent.state.conversation import trim_history
from agent.turn.context import TurnContext
from agent.turn import files
from agent.turn.degrade import search_results_instead
from agent.turn.loop import run_agent
from agent.turn.state import CountedModel, Turn
from agent.capabilities.knowledge import best_centered
from agent.knowledge.language import detect_language
from agent.understanding.answerable import unanswerable
from agent.understanding.router import Route, describe

log = logging.getLogger("askdesk.service")

Stage = Callable[[Turn, TurnContext], Awaitable[None]]


async def check(turn: Turn, ctx: TurnContext) -> None:
    if problem := ctx.input_problem(turn.text, files=bool(turn.request.attachments)):
        turn.result = AnswerResult(answer=problem, route="clarify")
        turn.remember = False


async def recall(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    req = turn.request
    history = req.history if req.history is not None else (await ctx.memory.load(req.surface, req.thread_id)).messages
    turn.history = trim_history([m for m in history if m.role in ("user", "assistant")], ctx.settings.history_chars)
    turn.identity = await ctx.identities.load(ctx.collection)
    await ctx.classifier.prepare()  # the collection's calibration, before its first search


async def read(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is None:
        turn.reading = ctx.classifier.read(turn.text, turn.history)


async def classify(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    span = turn.span.child("router", "chain", {"text": turn.text})
    with deadline(ctx.settings.turn_timeout * ROUTER_SHARE):  # past it, the LLM-free pre-filter routes
        # the asker already overrode a refusal of this message: the router model is not asked again
        model = None if turn.request.search_anyway else router(turn, ctx)
        turn.route = await ctx.classifier.decide(turn.reading, turn.retrieval.find, model=model,
                                                 identity=turn.identity, span=span)
    turn.route = files.about_files(turn.route, turn, ctx)
    if turn.route.name == "offtopic" and turn.request.search_anyway:
        turn.route = searched_anyway(turn, ctx)
    span.end(describe(turn.route) | {"query": turn.route.query})


def searched_anyway(turn: Turn, ctx: TurnContext) -> Route:
    """A refusal the asker overrode ("Search the documents anyway"): a wrong refusal costs a
    person their answer, so theirs is the last word. Searched like a doubtful message (in its
    thread's context too), and answered with the note that it may be outside the documents."""
    reading = turn.reading
    return Route(ctx.knowledge.name, turn.text, "asker", "refused, searched at the asker's request",
                 best_score=turn.route.best_score, borderline=True, also=list(reading.also) if reading else [],
                 rewritten=bool(reading and reading.also))


async def retrieve(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    capability = ctx.capabilities.get(turn.route.name)
    if capability is None:  # refusal, greeting, clarifying question: nothing to search
        return
    if turn.progress is not None:
        await turn.progress(capability.tools()[0].progress)
    turn.found = await search(turn, ctx)


async def search(turn: Turn, ctx: TurnContext) -> list[Found]:
    """What the route's capability finds for the routed query (knowledge: the search the
    classification already ran, when it did)."""
    route = turn.route
    if route.name == ctx.knowledge.name:
        return [await turn.retrieval.get(route.query, tuple(route.also))]
    found = await ctx.capabilities.get(route.name).prefetch(route.query, model=router(turn, ctx))
    return [found] if found is not None else []


async def respond(turn: Turn, ctx: TurnContext) -> None:
    if turn.result is not None:
        return
    route, identity = turn.route, turn.identity
    if route.name in ("offtopic", "smalltalk"):
        name = "refusal" if route.name == "offtopic" else "greeting"
        turn.result = result(turn, answer=ctx.prompts.render(
            name, capabilities=identity.capabilities, examples=identity.examples))
        return
    if route.name == "clarify":
        turn.result = result(turn, answer=route.clarification or ctx.prompts.render("clarification"))
        return
    if ctx.models.agent is None:
        turn.result = search_only(turn, ctx, ctx.models.notice)
        await judge(turn, ctx)
        return
    try:
        async with asyncio.timeout(remaining()):  # the deadline, even for a call that ignores it
            run = await run_agent(
                model=CountedModel(ctx.models.agent, turn.ledger), registry=ctx.tools, prompts=ctx.prompts,
                question=turn.text, history=turn.history, found=[*turn.attached, *turn.found],
                max_iterations=ctx.settings.max_iterations,
                domain=identity.domain, progress=turn.progress, span=turn.span, tool_specs=ctx.tool_specs,
                answer=turn.answer_text)
    except (ProviderError, TimeoutError) as exc:
        log.warning("turn: no model answered (%s); answering with search results", type(exc).__name__)
        if not turn.found:  # nothing was searched before the model (a benchmark's stages): search now
            turn.found = await search_in_reserve(turn, ctx)
        turn.result = await search_results_instead(exc, search_only(turn, ctx, ctx.models.notice), turn.answer_text,
                                                   ctx.prompts)
        return
    turn.result = result(turn, answer=run.answer, references=run.references, confidence=run.confidence,
                         tool_calls=run.tool_calls, data=run.data)
    await judge(turn, ctx, cited=bool(run.references))


async def judge(turn: Turn, ctx: TurnContext, *, cited: bool = True) -> None:
    """Mark a knowledge answer the documents do not support (agent/understanding/answerable.py):
    a search-only one says so in its first line; a model's keeps its words (the prompt has it
    say so) and shows the closest sources when it cited none. No model call."""
    result = turn.result
    if result is None or turn.route.name != ctx.knowledge.name or ctx.classifier.gate is None:
        return
    state = await ctx.classifier.gate.calibrated()
    found = turn.found[0] if turn.found else None
    model = not result.search_only
    if not model and not result.references:  # the search found nothing at all: said so already
        result.unanswerable = True
        return
    if not unanswerable(state.calibration if state else None, detect_language(turn.text), best_centered(found),
                        model=model, confidence=result.confidence, cited=cited):
        return
    result.unanswerable = True
    if not model:
        text, note = result.answer, ctx.prompts.render("borderline_note")
        if text.startswith(note):  # "may be outside the documents": now said plainly, once
            text = text[len(note):].lstrip("\n")
        first, _, rest = text.partition("\n")
        if first in {ctx.prompts.render("search_only_header"), ctx.prompts.render("search_only_weak")}:
            text = f"{ctx.prompts.render('unanswerable_header')}\n{rest}"
        result.answer = text
    elif not result.references:
        result.references = ctx.knowledge.search_only(found, ctx.prompts).references[:3]


STAGES: tuple[Stage, ...] = (check, files.attach, recall, read, classify, retrieve, respond)


# --------------------------------------------------------------------------- helpers


def router(turn: Turn, ctx: TurnContext) -> CountedModel | None:
    """The router model, its calls counted in the turn's ledger."""
    return CountedModel(ctx.models.router, turn.ledger) if ctx.models.router is not None else None


def result(turn: Turn, **fields) -> AnswerResult:
    """The turn's answer with what every answer says about its route."""
    route = turn.route
    return AnswerResult(route=route.name, rewritten_query=route.searched if route.rewritten else None, **fields)


def search_only(turn: Turn, ctx: TurnContext, notice: str | None) -> AnswerResult:
    """The route's capability answers from what it found, without a model."""
    capability = ctx.capabilities.get(turn.route.name)
    found = turn.found[0] if turn.found else None
    if turn.route.name == ctx.knowledge.name:
        found = files.with_files(turn, found)
    shown = capability.search_only(found, ctx.prompts)
    data = {f.tool: [f.result.data] for f in turn.found if f.result.data is not None}
    text = shown.text
    if turn.route.borderline:  # answered though it may be outside the documents: say so
        text = f"{ctx.prompts.render('borderline_note')}\n\n{text}"
    return result(turn, answer=text, references=shown.references, search_only=True, notice=notice,
                  tool_calls=[f.tool for f in turn.found], data=data)


async def search_in_reserve(turn: Turn, ctx: TurnContext) -> list[Found]:
    from agent.deadline import reserve

    async with asyncio.timeout(reserve(ctx.settings.turn_timeout)):
        return await search(turn, ctx)
